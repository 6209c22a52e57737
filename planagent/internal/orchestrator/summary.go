package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Summary renders the end-of-run summary: per task status, what was done,
// attempts, tokens and time; then totals.
func Summary(st *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s: %s\n\n", st.RunID, st.Status)
	fmt.Fprintf(&b, "Goal: %s\n\n", oneLine(st.Goal, 500))
	b.WriteString("| task | status | attempts | tokens (prompt/completion) | time | what was done |\n|---|---|---|---|---|---|\n")
	var tp, tc int
	var dur time.Duration
	counts := map[taskgraph.Status]int{}
	for _, t := range st.Tasks {
		in := st.Info[t.ID]
		if in == nil {
			in = &TaskInfo{}
		}
		counts[t.Status]++
		tp += in.Tokens.Prompt
		tc += in.Tokens.Completion
		dur += in.Duration
		what := t.Result
		if t.Status != taskgraph.Completed && t.Error != "" {
			what = t.Error
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d/%d | %s | %s |\n", t.ID, t.Status, t.Attempts,
			in.Tokens.Prompt, in.Tokens.Completion, in.Duration.Round(100*time.Millisecond), strings.ReplaceAll(oneLine(what, 200), "|", "\\|"))
	}
	fmt.Fprintf(&b, "\nTotals: %d tasks: %d completed, %d failed, %d skipped, %d pending. Agent tokens %d prompt / %d completion; planner and decisions %d / %d; agent time %s; wall time %s.\n",
		len(st.Tasks), counts[taskgraph.Completed], counts[taskgraph.Failed], counts[taskgraph.Skipped],
		counts[taskgraph.Pending]+counts[taskgraph.InProgress], tp, tc, st.Usage.Prompt, st.Usage.Completion,
		dur.Round(100*time.Millisecond), st.Updated.Sub(st.Created).Round(100*time.Millisecond))
	if len(st.Decisions) > 0 {
		b.WriteString("\nDecisions:\n")
		for _, d := range st.Decisions {
			fmt.Fprintf(&b, "- %s: %s — %s\n", d.Task, d.Action, oneLine(d.Reason, 200))
		}
	}
	return b.String()
}

// WriteSummary writes reports/summary.md atomically.
func WriteSummary(l volume.Layout, st *State) error {
	return protocol.WriteFileAtomic(l.Summary(), []byte(Summary(st)), 0o644)
}
