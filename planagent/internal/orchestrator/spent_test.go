package orchestrator

import (
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// What the run spent starts from its record (a resumed run's), and each
// booking counts once: the agents' in the running total, the run's own
// model calls on the record, where the next resume finds them.
func TestSpentBooksEachKindOnce(t *testing.T) {
	t.Parallel()
	st := &runrecord.State{Usage: llm.Usage{Prompt: 120, Completion: 5},
		Info: map[string]*runrecord.TaskInfo{
			"a": {Tokens: protocol.Tokens{Prompt: 10, Completion: 1}},
			"b": {Tokens: protocol.Tokens{Prompt: 20, Completion: 2}},
		}}
	s := newSpent(st)
	if got, want := s.booked(), (protocol.Tokens{Prompt: 150, Completion: 8}); got != want {
		t.Fatalf("booked on resume %+v, want %+v", got, want)
	}
	s.agentUsed(protocol.Tokens{Prompt: 7})
	s.modelUsed(llm.Usage{Prompt: 3, Completion: 1})
	if got, want := s.booked(), (protocol.Tokens{Prompt: 160, Completion: 9}); got != want {
		t.Errorf("booked %+v, want %+v", got, want)
	}
	if st.Usage.Prompt != 123 || st.Usage.Completion != 6 {
		t.Errorf("the record's model usage %+v, want the decider's call added", st.Usage)
	}
	if s.noted {
		t.Error("a budget announced before any was reached")
	}
	s.budgetNoted()
	if !s.noted {
		t.Error("the announcement was not kept")
	}
}
