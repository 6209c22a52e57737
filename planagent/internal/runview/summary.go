package runview

import (
	"fmt"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Summary is the end-of-run summary for the terminal: per task status,
// attempts, tokens, cost (when priced), time and what was done; then the
// totals and the decisions.
func Summary(r *Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s: %s\n\n", r.ID, r.Status)
	fmt.Fprintf(&b, "Goal: %s\n\n", oneLine(r.Goal, 500))
	if r.Boundary != "" {
		fmt.Fprintf(&b, "Boundary: %s\n\n", oneLine(r.Boundary, 500))
	}
	if r.Paused != "" {
		fmt.Fprintf(&b, "Paused: %s.\n\n", r.Paused)
	}
	if s := r.Stop; s != nil {
		fmt.Fprintf(&b, "Stop reason: %s", s.Reason)
		if len(s.Tasks) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(s.Tasks, ", "))
		}
		if s.Detail != "" {
			fmt.Fprintf(&b, ": %s", oneLine(s.Detail, 300))
		}
		b.WriteString("\n\n")
	}
	priced := r.CostUSD != nil
	b.WriteString("| task | status | attempts | tokens (prompt/completion) |")
	if priced {
		b.WriteString(" cost |")
	}
	b.WriteString(" time | what was done |\n|---|---|---|---|")
	if priced {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	counts := map[string]int{}
	for _, t := range r.Tasks {
		what := oneLine(t.Result, 200)
		if t.Status != "completed" && t.Error != "" {
			// The cause of an error is at its end: keep both ends.
			what = taskgraph.KeepEnds(strings.Join(strings.Fields(t.Error), " "), 200)
		}
		counts[t.Status]++
		fmt.Fprintf(&b, "| %s | %s | %d | %d/%d |", t.ID, t.Status, t.Attempts, t.Tokens.Prompt, t.Tokens.Completion)
		if priced {
			fmt.Fprintf(&b, " %s |", usd(t.CostUSD))
		}
		fmt.Fprintf(&b, " %s | %s |\n", ms(t.ElapsedMS), strings.ReplaceAll(what, "|", "\\|"))
	}
	writeSubagents(&b, r, priced)
	// The totals count the table's own statuses, so the two always agree.
	c := counts
	fmt.Fprintf(&b, "\nTotals: %d tasks: %d completed, %d failed, %d skipped, %d pending", len(r.Tasks), c["completed"], c["failed"], c["skipped"], c["pending"])
	if n := c[StatusInterrupted]; n > 0 {
		fmt.Fprintf(&b, ", %d interrupted (resume starts them again)", n)
	}
	if n := c["in_progress"]; n > 0 {
		fmt.Fprintf(&b, ", %d in progress", n)
	}
	fmt.Fprintf(&b, ". Agent tokens %d prompt / %d completion; planner and decisions %d / %d",
		r.AgentTokens.Prompt, r.AgentTokens.Completion, r.PlannerTokens.Prompt, r.PlannerTokens.Completion)
	if priced {
		fmt.Fprintf(&b, "; cost %s (%s)", usd(r.CostUSD), r.Model)
	}
	// Agent time puzzles when it passes the wall time: say what it adds up.
	fmt.Fprintf(&b, "; agent time %s (every attempt's, added up: more than the wall time when tasks ran in parallel); wall time %s.\n", ms(r.AgentMS), ms(r.WallMS))
	if len(r.Decisions) > 0 {
		b.WriteString("\nDecisions:\n")
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "- %s: %s — %s\n", d.Task, d.Action, oneLine(d.Reason, 200))
		}
	}
	return b.String()
}

// Markdown is reports/summary.md: the summary, the task graph as a mermaid
// block coloured by status, and the timeline of the attempts.
func Markdown(r *Run) string {
	var b strings.Builder
	b.WriteString(Summary(r))
	b.WriteString("\n## Task graph\n\n```mermaid\n")
	b.WriteString(Mermaid(r))
	b.WriteString("```\n\n## Timeline\n\n")
	b.WriteString(Timeline(r))
	if a := Attempts(r); a != "" {
		b.WriteString("\n## Attempts\n\n")
		b.WriteString(a)
	}
	return b.String()
}

// Timeline is the attempts of every task on the run's clock: a table (times
// from the run's start) and the same as a mermaid gantt chart.
func Timeline(r *Run) string {
	type row struct {
		task string
		s    Span
	}
	var rows []row
	for _, t := range r.Tasks {
		for _, s := range t.Timeline {
			rows = append(rows, row{t.ID, s})
		}
	}
	if len(rows) == 0 {
		return "No task has started.\n"
	}
	// Sorted by start: the order things happened in, whatever the graph's order.
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j].s.Start.Before(rows[j-1].s.Start); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	var b strings.Builder
	b.WriteString("| task | attempt | start | end | took | outcome |\n|---|---|---|---|---|---|\n")
	for _, x := range rows {
		end, took := "…", "…"
		if x.s.End != nil {
			end = "+" + since(r.Created, *x.s.End)
			took = protocol.FormatDuration(x.s.End.Sub(x.s.Start))
		}
		fmt.Fprintf(&b, "| %s | %d | +%s | %s | %s | %s |\n", x.task, x.s.Attempt, since(r.Created, x.s.Start), end, took, x.s.Status)
	}
	b.WriteString("\n```mermaid\ngantt\n  dateFormat x\n  axisFormat %H:%M:%S\n")
	for _, x := range rows {
		end := r.Updated
		if x.s.End != nil {
			end = *x.s.End
		}
		if !end.After(x.s.Start) {
			end = x.s.Start.Add(time.Millisecond) // gantt drops empty bars
		}
		tag := map[string]string{"completed": "done, ", "running": "active, ", "failed": "crit, ", "interrupted": "crit, "}[x.s.Status]
		fmt.Fprintf(&b, "  %s #%d (%s) :%s%d, %d\n", x.task, x.s.Attempt, x.s.Status, tag, x.s.Start.UnixMilli(), end.UnixMilli())
	}
	b.WriteString("```\n")
	return b.String()
}

func since(start, t time.Time) string {
	d := t.Sub(start)
	if d < 0 {
		d = 0
	}
	return protocol.FormatDuration(d)
}

func ms(n int64) string {
	return protocol.FormatDuration(time.Duration(n) * time.Millisecond)
}

func usd(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func oneLine(s string, n int) string {
	return firstLine(strings.Join(strings.Fields(s), " "), n)
}

// writeSubagents is the table of the tasks' sub-agents (none: nothing),
// whose tokens and cost are part of their task's above.
func writeSubagents(b *strings.Builder, r *Run, priced bool) {
	n := 0
	for _, t := range r.Tasks {
		n += len(t.Subagents)
	}
	if n == 0 {
		return
	}
	b.WriteString("\nSub-agents (part of their task's tokens and cost):\n\n| sub-agent | attempt | goal | tokens (prompt/completion) |")
	if priced {
		b.WriteString(" cost |")
	}
	b.WriteString("\n|---|---|---|---|")
	if priced {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, t := range r.Tasks {
		for _, s := range t.Subagents {
			fmt.Fprintf(b, "| %s | %d | %s | %d/%d |", s.ID, s.Attempt, strings.ReplaceAll(oneLine(s.Goal, 120), "|", "\\|"),
				s.Tokens.Prompt, s.Tokens.Completion)
			if priced {
				fmt.Fprintf(b, " %s |", usd(s.CostUSD))
			}
			b.WriteString("\n")
		}
	}
}
