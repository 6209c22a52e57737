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

// Summary is the plan state for the LLM and the operator (seed 000), one
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
		t := g.tasks[i]
		head := t.ID + ": " + label(t)
		switch t.Status {
		case Completed:
			b.WriteString("[X] " + head + suffix(t.Result))
		case InProgress:
			b.WriteString("[>] " + head)
		case Failed:
			b.WriteString("[!] " + head + suffix(t.Error))
		case Skipped:
			fmt.Fprintf(&b, "[-] %s (skipped: depends on %s)", head, t.SkippedBy)
		default:
			b.WriteString("[ ] " + head)
		}
		b.WriteByte('\n')
	}
	return b.String()
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

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
