package cli

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/plan"
)

// The plan confirmation names the tasks of several attempts, how they run
// and their cost's ceiling where there is one.
func TestAttemptsLine(t *testing.T) {
	p := &plan.Plan{Tasks: []plan.Task{
		{ID: "parser", Description: "p", Attempts: 3},
		{ID: "docs", Description: "d"},
	}}
	c := config.Defaults()
	c.Model = "m"
	if got := attemptsLine(&plan.Plan{Tasks: []plan.Task{{ID: "a", Description: "a"}}}, c); got != "" {
		t.Errorf("one attempt each: %q, want no line", got)
	}
	for _, tt := range []struct {
		name  string
		setup func(c *config.Config)
		want  string
	}{
		{"no budget", func(*config.Config) {},
			"Attempts: 4 for 2 tasks (parser ×3; the extra ones only after a task's first attempt fails); the 2 extra attempts have no token budget (task_budget_tokens), so their cost has no ceiling\n"},
		{"budget, no price", func(c *config.Config) { c.TaskBudgetTokens = 100_000 },
			"Attempts: 4 for 2 tasks (parser ×3; the extra ones only after a task's first attempt fails); the 2 extra attempts cost up to their token budgets (no price for m in the config)\n"},
		{"budget and price, parallel", func(c *config.Config) {
			c.TaskBudgetTokens, c.AttemptPolicy = 100_000, config.AttemptParallel
			c.Prices = map[string]config.Price{"m": {Input: 1, Output: 4}}
		}, "Attempts: 4 for 2 tasks (parser ×3; all at once); the 2 extra attempts may cost up to $0.80\n"},
		{"the run's default applies to the tasks that do not say", func(c *config.Config) { c.Attempts = 2 },
			"Attempts: 5 for 2 tasks (parser ×3, docs ×2; the extra ones only after a task's first attempt fails); the 3 extra attempts have no token budget (task_budget_tokens), so their cost has no ceiling\n"},
	} {
		c := c
		tt.setup(&c)
		if got := attemptsLine(p, c); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if !strings.Contains(renderPlan(p), "      attempts: 3\n") {
		t.Errorf("renderPlan does not show the task's attempts:\n%s", renderPlan(p))
	}
}
