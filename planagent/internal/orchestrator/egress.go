package orchestrator

import "github.com/codeagent/codeagent/planagent/internal/runtime/attempt"

// EgressLog is the egress proxy as a task's result sees it: what it
// turned away of an attempt (named attempt.Name), so the task's result
// says why a download in it failed, not only the run's events.
type EgressLog interface {
	Refused(name string) []string
}

// noteEgress puts what the egress proxy refused attempt n of task id on
// that attempt's result.
func (r *run) noteEgress(id string, n int) {
	if r.o.opts.Egress == nil {
		return
	}
	if refused := r.o.opts.Egress.Refused(attempt.Name(id, n)); len(refused) > 0 {
		r.attempts.Refused(id, n, refused)
	}
}
