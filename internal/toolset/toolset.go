// Package toolset assembles what a model is given over a workspace: the
// base tools, the repo_map tool and the repo map's options, and the tools of
// the configured MCP servers. planagent's planner (the read-only set) and
// codingagent's agent (exec, chat, watch: the coding set) build theirs here,
// so the two programs cannot drift apart in what a set holds.
package toolset

import (
	"context"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/mcp"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
)

// AttemptsRepoMapKey is the repo map cache key of every attempt's copy:
// they are checkouts of one repository at paths of their own, which a
// cache per path would parse afresh, and keep a file for, task after task.
const AttemptsRepoMapKey = "attempts"

// Options say which set to build over which workspace.
type Options struct {
	Workspace *tools.Workspace
	// ReadOnly builds the planner's set: the tools that look, never
	// change, and of the MCP servers' tools only those marked read-only
	// (readOnlyHint, or named in mcp_read_only).
	ReadOnly bool
	// Shell tunes shell_exec in the coding set (unused when ReadOnly).
	Shell tools.Options
	// RepoMapTokens is the repo map's budget; 0 means no repo_map tool
	// and no map in the prompt.
	RepoMapTokens int
	// RepoMapCache is the repo map's cache dir (volume.Layout.RepoMapCache).
	RepoMapCache string
	// RepoMapKey names the workspace's cache file there; "" is its root.
	// Attempts' copies share one (AttemptsRepoMapKey).
	RepoMapKey string
}

// New returns the base set over o.Workspace: the read-only or the coding
// tools, and repo_map when the repo map is on.
func New(o Options) *tools.Set {
	set := tools.Coding(o.Workspace, o.Shell)
	if o.ReadOnly {
		set = tools.ReadOnly(o.Workspace)
	}
	if o.RepoMapTokens > 0 {
		set = set.With(tools.NewRepoMap(o.Workspace, o.RepoMapCache, o.RepoMapKey))
	}
	return set
}

// Map is the repo map of o.Workspace as the set's repo_map tool sees it
// (its exclusions, its cache), ranked up by what boost names: the options
// of repomap.Section (the planner's one map) and repomap.Prompter (the
// agent's map, redrawn for its focused files).
func (o Options) Map(boost []string) repomap.Options {
	return repomap.Options{Root: o.Workspace.Root(), Exclude: o.Workspace.ExcludePatterns(),
		CacheDir: o.RepoMapCache, CacheKey: o.RepoMapKey, Tokens: o.RepoMapTokens, Boost: boost}
}

// Servers prepares cfg's MCP servers without starting them: they run on
// this machine with dir (the workspace root) as their default working
// directory, ${VAR} references read through getenv, and the API key
// scrubbed from what they return. Nothing configured gives an empty
// manager (Empty).
func Servers(cfg config.Config, dir string, getenv func(string) string) *mcp.Manager {
	return mcp.New(mcp.Options{Servers: cfg.MCPServers, ReadOnly: cfg.MCPReadOnly, Dir: dir,
		Getenv: getenv, Secrets: []string{cfg.APIKey}})
}

// WithMCP starts servers (a manager starts once; later calls get the first
// outcome) and returns set with their tools, only the read-only ones when
// readOnly. A server that did not start, and each warning, is a line for
// warn; the error (tool names that collide, say) is the configuration's.
// An empty manager changes nothing.
func WithMCP(ctx context.Context, set *tools.Set, servers *mcp.Manager, readOnly bool, warn func(string)) (*tools.Set, error) {
	if servers.Empty() {
		return set, nil
	}
	st := servers.Start(ctx)
	for _, line := range append(st.Failures(), st.Warnings...) {
		warn(line)
	}
	if st.Err != nil {
		return set, st.Err
	}
	for _, t := range st.Tools {
		if !readOnly || t.ReadOnly() {
			set = set.With(t)
		}
	}
	return set, nil
}
