package taskgraph

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// summaryTextMax bounds a result or error quoted in the summary; the full
// text stays on the task.
const summaryTextMax = 200

// Done reports whether nothing is pending or in progress any more.
func (g *Graph) Done() bool {
	for _, t := range g.tasks {
		if t.Status == Pending || t.Status == InProgress {
			return false
		}
	}
	return true
}

// Counts returns the number of tasks per status.
func (g *Graph) Counts() map[Status]int {
	c := map[Status]int{}
	for _, t := range g.tasks {
		c[t.Status]++
	}
	return c
}

// Summary is the plan state for the LLM and the operator, one
// line per task in topological order:
//
//	[X] id: title — result
//	[>] id: title
//	[ ] id: title
//	[!] id: title — error
//	[-] id: title (skipped: depends on X)
func (g *Graph) Summary() string {
	var b strings.Builder
	for _, i := range g.order {
		g.summaryLine(&b, i)
	}
	return b.String()
}

// BriefSummary is Summary for a plan of any size: whole up to limit tasks;
// beyond, a count per status, then every failed and in-progress task and
// the last completed and next pending ones (limit lines at most), in
// topological order, with what was left out counted. A project overview
// every agent reads must not grow with the plan.
func (g *Graph) BriefSummary(limit int) string {
	if len(g.tasks) <= limit {
		return g.Summary()
	}
	c := map[Status]int{}
	var n [5]int // pending, in progress, completed, failed, skipped: no map work per task
	for _, t := range g.tasks {
		switch t.Status {
		case Pending:
			n[0]++
		case InProgress:
			n[1]++
		case Completed:
			n[2]++
		case Failed:
			n[3]++
		case Skipped:
			n[4]++
		}
	}
	c[Pending], c[InProgress], c[Completed], c[Failed], c[Skipped] = n[0], n[1], n[2], n[3], n[4]
	var b strings.Builder
	fmt.Fprintf(&b, "%d tasks: %d completed, %d in progress, %d pending, %d failed, %d skipped\n",
		len(g.tasks), c[Completed], c[InProgress], c[Pending], c[Failed], c[Skipped])
	quarter := max(limit/4, 1)
	// Completed tasks kept: the last `quarter` of them in order.
	doneSeen, pendingSeen, shown, left := 0, 0, 0, 0
	for _, i := range g.order {
		t := g.tasks[i]
		keep := false
		switch t.Status {
		case Completed:
			doneSeen++
			keep = doneSeen > c[Completed]-quarter
		case Pending:
			pendingSeen++
			keep = pendingSeen <= quarter
		case Skipped:
			keep = false
		default: // failed, in progress: always worth a line
			keep = true
		}
		if !keep || shown >= limit {
			left++
			continue
		}
		g.summaryLine(&b, i)
		shown++
	}
	if left > 0 {
		fmt.Fprintf(&b, "… %d more tasks not listed\n", left)
	}
	return b.String()
}

func (g *Graph) summaryLine(b *strings.Builder, i int) {
	t := g.tasks[i]
	head := t.ID + ": " + label(t)
	switch t.Status {
	case Completed:
		b.WriteString("[X] " + head + suffix(t.Result))
	case InProgress:
		b.WriteString("[>] " + head)
	case Failed:
		b.WriteString("[!] " + head + errorSuffix(t.Error))
	case Skipped:
		fmt.Fprintf(b, "[-] %s (skipped: depends on %s)", head, t.SkippedBy)
	default:
		b.WriteString("[ ] " + head)
	}
	b.WriteByte('\n')
}

// label is the title, or the description's first line for tasks without one.
func label(t Task) string {
	if s := strings.TrimSpace(t.Title); s != "" {
		return s
	}
	return shorten(firstLine(t.Description), 80)
}

func suffix(s string) string {
	s = firstLine(s)
	if s == "" {
		return ""
	}
	return " — " + shorten(s, summaryTextMax)
}

// errorSuffix is suffix for an error: every line of it, and when it is too
// long its start and its end, where the cause is ("…: exec: \"/bin/sh\":
// no such file or directory"), not its start alone.
func errorSuffix(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	return " — " + KeepEnds(s, summaryTextMax)
}

// KeepEnds shortens s to about n runes by cutting its middle: a third of
// n from its start, the rest from its end.
func KeepEnds(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n / 3
	return strings.TrimSpace(string(r[:head])) + " … " + strings.TrimSpace(string(r[len(r)-(n-head-3):]))
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Unfinished returns at most limit pending or in-progress tasks in
// topological order (copies) and how many there are in all.
func (g *Graph) Unfinished(limit int) ([]Task, int) {
	var out []Task
	total := 0
	for _, i := range g.order {
		if t := g.tasks[i]; t.Status == Pending || t.Status == InProgress {
			total++
			if len(out) < limit {
				out = append(out, t.clone())
			}
		}
	}
	return out, total
}
