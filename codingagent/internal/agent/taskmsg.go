package agent

import (
	"fmt"
	"strings"
)

// formatTask is the first user message of a task: everything the planner
// handed over, in the order a person would read it.
func formatTask(t Task) string {
	var b strings.Builder
	title := strings.TrimSpace(t.Title)
	if title == "" {
		title = firstLineOf(t.Description)
	}
	fmt.Fprintf(&b, "# Task %s: %s\n", t.ID, title)
	if d := strings.TrimSpace(t.Description); d != "" && d != title {
		b.WriteString("\n" + d + "\n")
	}
	writeList(&b, "Acceptance criteria", t.Acceptance)
	if len(t.Dependencies) > 0 {
		b.WriteString("\n## Results of the tasks this one depends on\n")
		for _, d := range t.Dependencies {
			summary := strings.TrimSpace(d.Summary)
			if summary == "" {
				summary = "(no summary)"
			}
			fmt.Fprintf(&b, "\n### %s\n%s\n", d.ID, summary)
		}
	}
	writeList(&b, "Resources (files and directories to start from)", t.Resources)
	writeList(&b, "Hints", t.Hints)
	return b.String()
}

func writeList(b *strings.Builder, heading string, items []string) {
	var kept []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			kept = append(kept, it)
		}
	}
	if len(kept) == 0 {
		return
	}
	b.WriteString("\n## " + heading + "\n\n")
	for _, it := range kept {
		b.WriteString("- " + it + "\n")
	}
}
