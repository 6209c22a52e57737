package runview

import (
	"fmt"
	"regexp"
	"strings"
)

// Colours per task status, shared by the mermaid and dot pictures and the
// web page's legend (fill, stroke).
var colours = map[string][2]string{
	"pending":     {"#eeeeee", "#9e9e9e"},
	"in_progress": {"#bbdefb", "#1565c0"},
	"interrupted": {"#ffe0b2", "#e65100"},
	"completed":   {"#c8e6c9", "#2e7d32"},
	"failed":      {"#ffcdd2", "#c62828"},
	"skipped":     {"#fff3c4", "#b28704"},
}

var statusOrder = []string{"pending", "in_progress", StatusInterrupted, "completed", "failed", "skipped"}

func colourOf(status string) [2]string {
	if c, ok := colours[status]; ok {
		return c
	}
	return colours["pending"]
}

// Graph is the task graph as data: `planagent graph --format json`.
type Graph struct {
	Run    string `json:"run"`
	Status string `json:"status"`
	Nodes  []Node `json:"nodes"`
	Edges  []Edge `json:"edges"`
}

// Node is one task in the graph.
type Node struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Level    int    `json:"level"`
}

// Edge says To depends on From.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// GraphOf is r's task graph.
func GraphOf(r *Run) Graph {
	g := Graph{Run: r.ID, Status: r.Status, Nodes: []Node{}, Edges: []Edge{}}
	for _, t := range r.Tasks {
		g.Nodes = append(g.Nodes, Node{ID: t.ID, Title: t.Title, Status: t.Status, Attempts: t.Attempts, Level: t.Level})
		for _, d := range t.Dependencies {
			g.Edges = append(g.Edges, Edge{From: d, To: t.ID})
		}
	}
	return g
}

// Mermaid is r's task graph as a mermaid flowchart, each task coloured by
// its status. A node is named by its task's id where mermaid takes it as a
// name (letters, digits, '_'; not a keyword), so node t1 is task t1, not
// t0 numbered from 0; an id with '.' or '-' (mermaid syntax) is named
// task_<n> instead, n its place in the plan. The label carries the id.
func Mermaid(r *Run) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	name := make(map[string]string, len(r.Tasks))
	used := map[string]bool{}
	for _, t := range r.Tasks {
		if mermaidName.MatchString(t.ID) && !mermaidKeywords[strings.ToLower(t.ID)] {
			name[t.ID], used[t.ID] = t.ID, true
		}
	}
	for i, t := range r.Tasks {
		if name[t.ID] != "" {
			continue
		}
		n := fmt.Sprintf("task_%d", i+1)
		for used[n] {
			n += "_"
		}
		name[t.ID], used[n] = n, true
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, "  %s[\"%s: %s<br/>%s\"]:::%s\n", name[t.ID], mermaidText(t.ID), mermaidText(firstLine(t.Title, 60)),
			strings.ReplaceAll(t.Status, "_", " "), t.Status)
	}
	for _, t := range r.Tasks {
		for _, d := range t.Dependencies {
			if n, ok := name[d]; ok {
				fmt.Fprintf(&b, "  %s --> %s\n", n, name[t.ID])
			}
		}
	}
	for _, s := range statusOrder {
		c := colours[s]
		fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:%s,color:#000\n", s, c[0], c[1])
	}
	return b.String()
}

var mermaidName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// mermaidKeywords are words a flowchart reads as syntax, not as a node.
var mermaidKeywords = map[string]bool{"end": true, "graph": true, "flowchart": true, "subgraph": true,
	"style": true, "class": true, "classdef": true, "click": true, "linkstyle": true, "direction": true, "default": true}

// mermaidText escapes what would end or reinterpret a quoted label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "`", "#96;", "\n", " ").Replace(s)
}

// Dot is r's task graph in graphviz's language.
func Dot(r *Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotString(r.ID))
	b.WriteString("  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n")
	for _, t := range r.Tasks {
		c := colourOf(t.Status)
		fmt.Fprintf(&b, "  %s [label=%s, fillcolor=%q, color=%q];\n", dotString(t.ID),
			dotString(t.ID+"\n"+firstLine(t.Title, 60)+"\n"+strings.ReplaceAll(t.Status, "_", " ")), c[0], c[1])
	}
	for _, t := range r.Tasks {
		for _, d := range t.Dependencies {
			fmt.Fprintf(&b, "  %s -> %s;\n", dotString(d), dotString(t.ID))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotString quotes s as a dot ID; a newline becomes dot's \n line break.
func dotString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "").Replace(s) + `"`
}

// Statuses are the task statuses in display order.
func Statuses() []string { return append([]string(nil), statusOrder...) }

// Colour is the fill and stroke of a task with status in every picture.
func Colour(status string) (fill, stroke string) {
	c := colourOf(status)
	return c[0], c[1]
}
