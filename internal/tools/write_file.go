package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed write_file.md
var writeFileDescription string

type writeFileParams struct {
	Path    string `json:"path" description:"File path, relative to the workspace root"`
	Content string `json:"content" description:"The complete content to write"`
}

// NewWriteFile returns the write_file tool.
func NewWriteFile(ws *Workspace) Tool {
	return NewFunc("write_file", writeFileDescription, false,
		func(ctx context.Context, p writeFileParams) (Result, error) { return writeFile(ws, p) })
}

func writeFile(ws *Workspace, p writeFileParams) (Result, error) {
	abs, err := ws.Resolve(p.Path)
	if err != nil {
		return toolError(err), nil
	}
	rel := ws.Rel(abs)
	if err := writeFileAtomic(abs, []byte(p.Content)); err != nil {
		return errorResult("could not write %q: %v", rel, err), nil
	}
	return Result{
		Content: fmt.Sprintf("wrote %s: %s, %s", rel, plural(len(p.Content), "byte"), plural(countLines(p.Content), "line")),
		Files:   []FileRef{{Path: rel, Changed: true}},
	}, nil
}

// countLines counts lines the way an editor shows them: a final line
// without a newline still counts.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
