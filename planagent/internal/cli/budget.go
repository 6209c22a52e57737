package cli

import (
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
)

// budgetFlag is the flag that raises the budget a paused run reached, with
// a placeholder for its new value: a cost pause is not lifted by tokens.
func budgetFlag(stop *runrecord.Stop) string {
	switch {
	case stop != nil && stop.Reason == runrecord.StopBudgetUSD:
		return "--budget-usd USD"
	case stop != nil && stop.Reason == runrecord.StopBudgetTime:
		return "--budget-time DURATION"
	default:
		return "--budget-tokens N"
	}
}

// budget is the run's budget from the effective settings. A USD budget
// needs the price of the run's model: without one it is a usage error
// naming the missing price.
func (s *session) budget(model string) (orchestrator.Budget, error) {
	c := s.cfg
	b := orchestrator.Budget{Tokens: c.BudgetTokens, Time: c.BudgetTime, USD: c.BudgetUSD, TaskTokens: c.TaskBudgetTokens}
	if c.BudgetUSD <= 0 {
		return b, nil
	}
	p, ok := c.PriceOf(model)
	if !ok {
		return b, cmdutil.UsageError(fmt.Errorf("a budget in USD (%g) needs the price of the model %q, and the config has none: "+
			"add it to the config file, e.g.\n  prices:\n    %s: {input: 0.15, output: 0.60}   # USD per 1M prompt / completion tokens",
			c.BudgetUSD, model, model))
	}
	prices := runview.Prices{model: {Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite}}
	b.Cost = func(used protocol.Tokens) float64 {
		c, _ := prices.Cost(model, runview.TokensOf(used))
		return c
	}
	return b, nil
}

// budgetLine says the run's budgets for the plan confirmation; "" without any.
func budgetLine(c config.Config) string {
	var parts []string
	if c.BudgetTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", c.BudgetTokens))
	}
	if c.BudgetTime > 0 {
		parts = append(parts, c.BudgetTime.String()+" of running time")
	}
	if c.BudgetUSD > 0 {
		parts = append(parts, config.FormatUSD(c.BudgetUSD))
	}
	if c.TaskBudgetTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens per task", c.TaskBudgetTokens))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Budgets: " + strings.Join(parts, ", ") + " (reached: no new task starts, the run pauses; exit 3)\n"
}
