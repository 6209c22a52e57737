package telemetry

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A span's traceparent, handed to another process, makes its spans
// children in the same trace; the task id of the ctx is on every span.
func TestTraceParentCarriesTheTraceAndTheTask(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(sdktrace.NewTracerProvider()) })

	ctx, parent := Start(WithTask(t.Context(), "t1"), "invoke_agent codingagent")
	tp := TraceParent(ctx)
	if len(tp) != 55 {
		t.Fatalf("traceparent %q", tp)
	}
	// The other program: a fresh ctx with only the traceparent.
	_, child := Start(WithTask(WithTraceParent(t.Context(), tp), "t1"), "chat m")
	child.End()
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	c, p := spans[0], spans[1]
	if c.SpanContext().TraceID() != p.SpanContext().TraceID() || c.Parent().SpanID() != p.SpanContext().SpanID() {
		t.Error("the child is not under the parent in one trace")
	}
	for _, s := range spans {
		found := false
		for _, a := range s.Attributes() {
			found = found || (a.Key == TaskID && a.Value.AsString() == "t1")
		}
		if !found {
			t.Errorf("span %s lacks the task id", s.Name())
		}
	}
	if ctx := t.Context(); WithTraceParent(ctx, "") != ctx {
		t.Error("an empty traceparent changed the ctx")
	}
}

// The standard switches turn traces off though an endpoint is set (for
// other programs of the environment).
func TestSetupOffByTheStandardSwitches(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	if !Enabled() {
		t.Fatal("an endpoint alone does not enable traces")
	}
	for _, kv := range [][2]string{{"OTEL_SDK_DISABLED", "true"}, {"OTEL_TRACES_EXPORTER", "none"}} {
		t.Run(kv[0], func(t *testing.T) {
			t.Setenv(kv[0], kv[1])
			if Enabled() {
				t.Errorf("%s=%s leaves traces on", kv[0], kv[1])
			}
		})
	}
}
