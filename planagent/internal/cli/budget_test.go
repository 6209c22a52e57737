package cli

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

func TestBudgetLineKeepsEveryDigitOfTheUSDBudget(t *testing.T) {
	line := budgetLine(config.Config{BudgetUSD: 0.015, BudgetTokens: 5000})
	if !strings.Contains(line, "$0.015") || !strings.Contains(line, "5000 tokens") {
		t.Errorf("budget line %q, want $0.015 and 5000 tokens", line)
	}
	if line := budgetLine(config.Config{}); line != "" {
		t.Errorf("budget line without budgets = %q, want none", line)
	}
}

func TestBudgetFlagNamesTheBudgetReached(t *testing.T) {
	for reason, want := range map[string]string{
		runrecord.StopBudgetUSD:  "--budget-usd",
		runrecord.StopBudgetTime: "--budget-time",
		runrecord.StopBudgetTok:  "--budget-tokens",
	} {
		if got := budgetFlag(&runrecord.Stop{Reason: reason}); !strings.HasPrefix(got, want+" ") {
			t.Errorf("budgetFlag(%s) = %q, want %s", reason, got, want)
		}
	}
	if got := budgetFlag(nil); !strings.HasPrefix(got, "--budget-tokens") {
		t.Errorf("budgetFlag of a run without a stop reason (older runs) = %q", got)
	}
}
