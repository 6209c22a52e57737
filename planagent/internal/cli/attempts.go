package cli

import (
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/plan"
)

// attemptsLine says, for the plan confirmation, which tasks get several
// attempts and what they may cost; "" when every task gets one. The cost
// is a ceiling only where one exists: each attempt's token budget
// (task_budget_tokens, or the task's own) at the model's output price,
// the dearer side; without a budget or a price the line says so rather
// than guess.
func attemptsLine(p *plan.Plan, c config.Config) string {
	var many []string
	extra, total := 0, 0
	var ceiling float64
	price, priced := c.PriceOf(c.Model)
	bounded := true
	for _, t := range p.Tasks {
		n := t.Attempts
		if n == 0 {
			n = c.Attempts
		}
		n = max(n, 1)
		total += n
		budget := t.TokenBudget()
		if budget == 0 {
			budget = c.TaskBudgetTokens
		}
		if n > 1 {
			many = append(many, fmt.Sprintf("%s ×%d", t.ID, n))
			extra += n - 1
			if budget == 0 {
				bounded = false
			}
			ceiling += float64((n-1)*budget) * max(price.Input, price.Output) / 1e6
		}
	}
	if extra == 0 {
		return ""
	}
	how := "all at once"
	if c.AttemptPolicy != config.AttemptParallel {
		how = "the extra ones only after a task's first attempt fails"
	}
	line := fmt.Sprintf("Attempts: %d for %d tasks (%s; %s)", total, len(p.Tasks), strings.Join(many, ", "), how)
	switch {
	case !bounded:
		line += fmt.Sprintf("; the %d extra attempts have no token budget (task_budget_tokens), so their cost has no ceiling", extra)
	case !priced:
		line += fmt.Sprintf("; the %d extra attempts cost up to their token budgets (no price for %s in the config)", extra, c.Model)
	default:
		line += fmt.Sprintf("; the %d extra attempts may cost up to %s", extra, config.FormatUSD(ceiling))
	}
	return line + "\n"
}
