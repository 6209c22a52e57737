package orchestrator

import (
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// spent owns what the run has spent as its budget reads it (budgetHit,
// the gateway's gate) and whether the reached budget was announced: next
// reads both. Each change is named for what was spent, so a token is
// booked once, in one place, and the record's model usage is changed only
// here. Only the loop's goroutine touches it.
type spent struct {
	// agents: the agents' booked tokens, a running total (the budget is
	// checked on every step; summing every task's tokens each time made a
	// 10 000-task run quadratic).
	agents protocol.Tokens
	models *llm.Usage // the record's (State.Usage): the planner's, the decider's, the LLM judge's
	noted  bool       // the reached budget was announced (ActNoteBudget)
}

// newSpent is what st's run has spent so far, as its record has it.
func newSpent(st *runrecord.State) *spent {
	return &spent{agents: st.AgentTokens(), models: &st.Usage}
}

// agentUsed books an attempt's tokens: its report's, or the gateway's count
// of one that ended without a report.
func (s *spent) agentUsed(t protocol.Tokens) { s.agents.Add(t) }

// modelUsed books a call of the run's own model (the decider, the LLM
// judge) on the record.
func (s *spent) modelUsed(u llm.Usage) { s.models.Add(u) }

// booked is every token booked so far: the agents' and the run's own model
// calls' (the planner's among them).
func (s *spent) booked() protocol.Tokens {
	b := s.agents
	b.Add(usageTokens(*s.models))
	return b
}

// budgetNoted: the reached budget was announced; next does not announce
// it again.
func (s *spent) budgetNoted() { s.noted = true }
