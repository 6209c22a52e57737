package runview

import (
	"fmt"
	"strings"
)

// Attempts is the table of the attempts of every task that had more than
// one, each with how it ended, its rank among the passing ones (1: the one
// merged), tokens, cost, the agent's time, why it failed and the ref its
// commit is kept under when it was not merged; "" when
// every task had one attempt (docs/attempts.md).
func Attempts(r *Run) string {
	var b strings.Builder
	for _, t := range r.Tasks {
		if len(t.AttemptResults) < 2 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| task | attempt | outcome | rank | told the failure | tokens (prompt/completion) | cost | took | why |\n" +
				"|---|---|---|---|---|---|---|---|---|\n")
		}
		for _, a := range t.AttemptResults {
			rank, hinted := "-", "no"
			if a.Rank > 0 {
				rank = fmt.Sprint(a.Rank)
			}
			if a.Hinted {
				hinted = "yes"
			}
			why := strings.ReplaceAll(oneLine(a.Error, 160), "|", "\\|")
			if a.JudgeReason != "" {
				why = strings.TrimSpace(why + " LLM judge: " + strings.ReplaceAll(oneLine(a.JudgeReason, 160), "|", "\\|"))
			}
			outcome := a.Status
			if a.DiffLines != nil {
				// What the ranking weighed, for attempts side by side.
				outcome += fmt.Sprintf(" (%d lines", *a.DiffLines)
				if a.JudgeScore != nil {
					outcome += fmt.Sprintf(", judge %g", *a.JudgeScore)
				}
				outcome += ")"
			}
			if a.Ref != "" {
				// Where to look at what it did: git show, planagent diff.
				why = strings.TrimSpace(why + " (kept as `" + a.Ref + "`)")
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d/%d | %s | %s | %s |\n", t.ID, a.Attempt, outcome, rank, hinted,
				a.Tokens.Prompt, a.Tokens.Completion, usd(a.CostUSD), ms(a.DurationMS), why)
		}
	}
	return b.String()
}
