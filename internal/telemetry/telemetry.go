// Package telemetry gives both programs OpenTelemetry traces when the
// standard OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// is set: spans exported over OTLP/HTTP, named and attributed after the
// OpenTelemetry GenAI semantic conventions (SemconvVersion; they are still
// marked Development). Without the variable nothing is exported and a span
// costs a no-op.
//
// The spans: invoke_agent for a run (planagent) and for a task attempt
// (planagent's side and the coding agent's), chat for an LLM call,
// execute_tool for a tool call; each carries the task id when it belongs to
// a task. A run is one trace across both programs and its processes: the
// attempt's span context reaches the coding agent in the command file's
// traceparent, and the run's first span context, kept with the run, is the
// parent of a resumed process's run span.
//
// The exporter (OTLP/HTTP, the SDK, and the protobuf and gRPC packages
// they bring) is in the export package, which only the programs' main
// path imports: a package that starts spans links none of it.
package telemetry

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the GenAI semantic conventions the span
// names and attributes follow.
const SemconvVersion = "1.37.0"

// Attribute keys of the GenAI conventions, and the project's own.
const (
	OperationName = attribute.Key("gen_ai.operation.name")
	ProviderName  = attribute.Key("gen_ai.provider.name")
	RequestModel  = attribute.Key("gen_ai.request.model")
	FinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	InputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	OutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	AgentName     = attribute.Key("gen_ai.agent.name")
	ToolName      = attribute.Key("gen_ai.tool.name")
	ToolCallID    = attribute.Key("gen_ai.tool.call.id")
	TaskID        = attribute.Key("codeagent.task.id")
	RunID         = attribute.Key("codeagent.run.id")
	Attempt       = attribute.Key("codeagent.attempt")
	Resumed       = attribute.Key("codeagent.resumed") // on the run span of a resumed process
)

// Enabled reports whether traces are exported: the OTLP endpoint is set,
// and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none turns
// them off (the standard switches, for an endpoint set for other programs).
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

type taskKey struct{}

// WithTask marks ctx as working on task id: spans started from it carry it.
func WithTask(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, taskKey{}, id)
}

// Start starts an internal span named name, with the task id of ctx if any.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return start(ctx, name, trace.SpanKindInternal, attrs)
}

// StartClient is Start for a call to a remote service (the conventions
// want an inference span's kind to be client).
func StartClient(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return start(ctx, name, trace.SpanKindClient, attrs)
}

func start(ctx context.Context, name string, kind trace.SpanKind, attrs []attribute.KeyValue) (context.Context, trace.Span) {
	if id, ok := ctx.Value(taskKey{}).(string); ok && id != "" {
		attrs = append(attrs, TaskID.String(id))
	}
	return otel.Tracer("github.com/codeagent/codeagent").Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// TraceParent is the W3C traceparent of ctx's span ("" without one).
func TraceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// WithTraceParent makes the span a W3C traceparent names the parent of the
// spans started from the returned ctx (ctx unchanged when it is empty or
// malformed).
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
