package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
)

//go:embed glob.md
var globDescription string

const (
	globMaxResults = 100
	// searchTimeout bounds one glob or grep walk: a huge tree must not stall
	// the agent loop.
	searchTimeout = 60 * time.Second
)

type globParams struct {
	Pattern string `json:"pattern" description:"Glob pattern relative to the workspace, e.g. **/*.go"`
}

// NewGlob returns the glob tool.
func NewGlob(ws *Workspace) Tool {
	return NewFunc("glob", globDescription, true,
		func(ctx context.Context, p globParams) (Result, error) { return globFiles(ctx, ws, p) })
}

func globFiles(ctx context.Context, ws *Workspace, p globParams) (Result, error) {
	sctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	matches, err := ws.Glob(sctx, p.Pattern)
	switch {
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("glob %q: %w", p.Pattern, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("glob %q took longer than %s; use a pattern with a literal directory prefix such as \"src/**/*.go\"", p.Pattern, searchTimeout), nil
	case err != nil:
		return toolError(err), nil
	case len(matches) == 0:
		return Result{Content: fmt.Sprintf("no files match %q", p.Pattern)}, nil
	}
	total := len(matches)
	if total > globMaxResults {
		matches = matches[:globMaxResults]
	}
	content := strings.Join(matches, "\n")
	if total > globMaxResults {
		content += fmt.Sprintf("\n\n(showing the first %d of %d files; use a more specific pattern)", globMaxResults, total)
	}
	return Result{Content: content}, nil
}
