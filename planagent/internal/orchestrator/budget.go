package orchestrator

import (
	"fmt"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// Budget bounds a run. When one of Tokens, Time or USD is reached no new
// task starts; the tasks in flight finish and the run ends paused. Zero
// values are no limit.
type Budget struct {
	Tokens int           // every token of the run: agents, planner, decisions
	Time   time.Duration // the run's running time (runrecord.State.Elapsed)
	USD    float64       // the cost of those tokens, priced by Cost
	// Cost prices tokens in USD (cache-aware, or the server's own figure);
	// the caller makes sure it exists when USD is set (a USD budget
	// without prices is a usage error).
	Cost func(used protocol.Tokens) float64
	// TaskTokens is each task's token budget unless the plan gives the
	// task its own: past it the agent stops and the task fails ("budget").
	TaskTokens int
}

// usageTokens is the planner's and the decider's usage as report tokens.
func usageTokens(u llm.Usage) protocol.Tokens {
	return protocol.Tokens{Prompt: u.Prompt, Completion: u.Completion, Cached: u.Cached, CacheWrite: u.CacheWrite, CostUSD: u.CostUSD}
}

// exceeded is the budget that used has reached (text "" when none has).
func (b Budget) exceeded(used protocol.Tokens, elapsed time.Duration) limitHit {
	if total := used.Prompt + used.Completion; b.Tokens > 0 && total >= b.Tokens {
		return limitHit{runrecord.StopBudgetTok, float64(b.Tokens), float64(total),
			fmt.Sprintf("token budget reached: %d of %d tokens used", total, b.Tokens)}
	}
	if b.Time > 0 && elapsed >= b.Time {
		return limitHit{runrecord.StopBudgetTime, b.Time.Seconds(), elapsed.Round(time.Second).Seconds(),
			fmt.Sprintf("time budget reached: ran %s of %s", elapsed.Round(time.Second), b.Time)}
	}
	if b.USD > 0 && b.Cost != nil {
		if c := b.Cost(used); c >= b.USD {
			return limitHit{runrecord.StopBudgetUSD, b.USD, c, fmt.Sprintf("cost budget reached: $%.4f of %s", c, config.FormatUSD(b.USD))}
		}
	}
	return limitHit{}
}

// budgetHit is the budget the run has reached (text "" when none).
func (r *run) budgetHit() limitHit {
	// Every token of the run: the agents', the planner's and the
	// decider's.
	used := r.spent.booked()
	used.Add(r.gate.openUsage()) // the gateway's count of the attempts under way
	return r.o.opts.Budget.exceeded(used, r.elapsed+r.o.opts.Now().Sub(r.started))
}
