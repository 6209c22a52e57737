package orchestrator

import (
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// next names the report statuses and reasons and the run statuses it
// decides on without importing the packages that define them (they do
// I/O): the values must stay the same.
func TestNextSpeaksTheRecordsValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ next, theirs string }{
		{string(next.ReportCompleted), string(protocol.StatusCompleted)},
		{string(next.ReportInterrupted), string(protocol.StatusInterrupted)},
		{next.ReasonConfig, protocol.ReasonConfig},
		{next.ReasonBudget, protocol.ReasonBudget},
		{string(next.RunCompleted), string(runrecord.RunCompleted)},
		{string(next.RunFailed), string(runrecord.RunFailed)},
		{string(next.RunAborted), string(runrecord.RunAborted)},
		{string(next.RunPaused), string(runrecord.RunPaused)},
	} {
		if c.next != c.theirs {
			t.Errorf("next says %q where the record says %q", c.next, c.theirs)
		}
	}
}
