package orchestrator

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/telemetry"
)

// traces are the attempts' invoke_agent spans, open from the dispatch to
// the agent's end, each with the traceparent its command carries so the
// coding agent's spans of the attempt join it. They are kept by the
// attempt's key (run.key): a task of several attempts side by side has
// one open per attempt. Only the loop's goroutine touches them.
type traces struct {
	runID   string
	open    map[string]trace.Span
	parents map[string]string
}

func newTraces(runID string) *traces {
	return &traces{runID: runID, open: map[string]trace.Span{}, parents: map[string]string{}}
}

// start opens the span of attempt n of task id, under key, under the
// run's span in ctx.
func (t *traces) start(ctx context.Context, key, id string, n int) {
	t.end(key, "interrupted") // a span left open by an attempt that never ended
	actx, span := telemetry.Start(telemetry.WithTask(ctx, id), "invoke_agent codingagent",
		telemetry.OperationName.String("invoke_agent"), telemetry.AgentName.String("codingagent"),
		telemetry.RunID.String(t.runID), telemetry.Attempt.Int(n))
	t.open[key] = span
	t.parents[key] = telemetry.TraceParent(actx)
}

// parent is the traceparent of the attempt of key for its command, ""
// when its span is not open.
func (t *traces) parent(key string) string { return t.parents[key] }

// end ends the span of the attempt of key with its outcome.
func (t *traces) end(key, status string) {
	span, ok := t.open[key]
	if !ok {
		return
	}
	if status != "completed" {
		span.SetStatus(codes.Error, status)
	}
	span.End()
	delete(t.open, key)
	delete(t.parents, key)
}

// endAll ends what is still open when Drive returns (Ctrl-C, an error).
func (t *traces) endAll() {
	for key := range t.open {
		t.end(key, "interrupted")
	}
}

// usage puts the gateway's count on the span of the attempt of key.
func (t *traces) usage(key string, used protocol.Tokens) {
	if span, ok := t.open[key]; ok {
		span.SetAttributes(telemetry.InputTokens.Int(used.Prompt), telemetry.OutputTokens.Int(used.Completion),
			attribute.String("codeagent.usage.counted_by", "gateway"))
	}
}
