package orchestrator

import (
	"context"

	"go.opentelemetry.io/otel/codes"

	"github.com/codeagent/codeagent/internal/telemetry"
)

// traceAttempt starts the invoke_agent span of task id's attempt, under
// the run's span in ctx; its traceparent goes into the command, so the
// coding agent's spans of the attempt join it.
//
// The spans are kept by the attempt's key (run.key): a task of several
// attempts side by side has one open per attempt.
func (r *run) traceAttempt(ctx context.Context, id string, attempt int) {
	key := r.key(id, attempt)
	r.endTrace(key, "interrupted") // a span left open by an attempt that never ended
	actx, span := telemetry.Start(telemetry.WithTask(ctx, id), "invoke_agent codingagent",
		telemetry.OperationName.String("invoke_agent"), telemetry.AgentName.String("codingagent"),
		telemetry.RunID.String(r.st.RunID), telemetry.Attempt.Int(attempt))
	r.traces[key] = span
	r.traceparents[key] = telemetry.TraceParent(actx)
}

// endTrace ends the span of the attempt of key id with its outcome.
func (r *run) endTrace(id, status string) {
	span, ok := r.traces[id]
	if !ok {
		return
	}
	if status != "completed" {
		span.SetStatus(codes.Error, status)
	}
	span.End()
	delete(r.traces, id)
	delete(r.traceparents, id)
}

// endTraces ends what is still open when Drive returns (Ctrl-C, an error).
func (r *run) endTraces() {
	for id := range r.traces {
		r.endTrace(id, "interrupted")
	}
}
