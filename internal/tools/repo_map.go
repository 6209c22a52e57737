package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/repomap"
)

//go:embed repo_map.md
var repoMapDescription string

const (
	repoMapDefaultTokens = repomap.DefaultTokens
	repoMapMaxTokens     = 8192
	// repoMapTimeout bounds one map: a cold map of a very large tree must
	// not stall the agent loop (the Go standard library takes about 2 s).
	repoMapTimeout = 60 * time.Second
)

type repoMapParams struct {
	Path   string `json:"path,omitempty" description:"Directory or file to map, relative to the workspace root (default: the whole workspace)"`
	Tokens int    `json:"tokens,omitempty" description:"Size of the map in tokens (default 1024, max 8192)"`
	Tests  bool   `json:"tests,omitempty" description:"Map test files and testdata/ too (left out by default)"`
}

// NewRepoMap returns the read-only repo_map tool. cacheDir keeps parsed
// files between calls (e.g. <volumes>/context/.repomap-cache); "" disables
// the cache. cacheKey names the workspace's cache file there ("": its
// root; see repomap.Options.CacheKey).
func NewRepoMap(ws *Workspace, cacheDir, cacheKey string) Tool {
	return NewFunc("repo_map", repoMapDescription, true,
		func(ctx context.Context, p repoMapParams) (Result, error) {
			return repoMap(ctx, ws, cacheDir, cacheKey, p)
		})
}

func repoMap(ctx context.Context, ws *Workspace, cacheDir, cacheKey string, p repoMapParams) (Result, error) {
	tokens := p.Tokens
	switch {
	case tokens < 0:
		return errorResult("tokens must be positive (default %d, max %d)", repoMapDefaultTokens, repoMapMaxTokens), nil
	case tokens == 0:
		tokens = repoMapDefaultTokens
	case tokens > repoMapMaxTokens:
		tokens = repoMapMaxTokens
	}
	scope := ""
	if p.Path != "" && p.Path != "." {
		abs, err := ws.Resolve(p.Path)
		if err != nil {
			return toolError(err), nil
		}
		if _, err := os.Stat(abs); err != nil {
			return errorResult("%s", describeFileError(ws, abs, err)), nil
		}
		if scope = ws.Rel(abs); scope == "." {
			scope = ""
		}
	}
	mctx, cancel := context.WithTimeout(ctx, repoMapTimeout)
	defer cancel()
	// The whole workspace is ranked even when only a part is shown, so the
	// part's files are ordered by their importance to everything else.
	m, err := repomap.Build(mctx, repomap.Options{Root: ws.Root(), Exclude: ws.ExcludePatterns(), CacheDir: cacheDir, CacheKey: cacheKey, Tokens: -1, Boost: FocusFrom(ctx),
		IncludeTests: p.Tests})
	switch {
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("repo_map: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("mapping the workspace took longer than %s; give a smaller directory as path", repoMapTimeout), nil
	case err != nil:
		return Result{}, fmt.Errorf("repo_map: %w", err)
	}
	files := m.Files
	if scope != "" {
		files = make([]repomap.File, 0, len(m.Files))
		for _, f := range m.Files {
			if f.Path == scope || strings.HasPrefix(f.Path, scope+"/") {
				files = append(files, f)
			}
		}
	}
	where := "the workspace"
	if scope != "" {
		where = scope
	}
	if len(files) == 0 {
		return Result{Content: fmt.Sprintf("no source files to map in %s (mapped languages: Go, Python, JavaScript/TypeScript, Java, Rust, C/C++; ignored, vendored and generated files are left out)", where)}, nil
	}
	text := repomap.Render(files, tokens)
	header := fmt.Sprintf("Repo map of %s: %d source files, most referenced first (%d of %d tokens used).\n",
		where, len(files), repomap.EstimateTokens(text), tokens)
	if text == "" {
		text = "(not even one file fits in this many tokens; ask for more)\n"
	}
	return Result{Content: header + text}, nil
}

type focusKey struct{}

// WithFocus returns ctx carrying the caller's focused files (the agent's
// files in play), which rank higher in repo_map — as Aider boosts the files
// in the chat.
func WithFocus(ctx context.Context, paths []string) context.Context {
	if len(paths) == 0 {
		return ctx
	}
	return context.WithValue(ctx, focusKey{}, paths)
}

// FocusFrom returns the focused files WithFocus put in ctx.
func FocusFrom(ctx context.Context) []string {
	p, _ := ctx.Value(focusKey{}).([]string)
	return p
}
