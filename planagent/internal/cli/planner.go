package cli

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/filetree"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/projectdoc"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
)

// makePlan runs the planner over the workspace.
// mapped is called once the repo map is made, before the model is asked.
func makePlan(ctx context.Context, s *session, client *llmclient.Client, goal string, sink events.Sink, mapped func()) (*plan.Plan, llm.Usage, error) {
	ws, err := tools.NewWorkspace(s.layout.Workspace())
	if err != nil {
		return nil, llm.Usage{}, cmdutil.UsageError(fmt.Errorf("workspace: %w", err))
	}
	if rel := s.volumesInWorkspace(); rel != "" {
		ws.Exclude(rel)
	}
	cache, err := s.repoMapCache()
	if err != nil {
		s.logger.Warn("the repo map is made without its cache", "err", err)
	}
	o := toolset.Options{Workspace: ws, ReadOnly: true, RepoMapTokens: s.cfg.RepoMapTokens, RepoMapCache: cache}
	set := toolset.New(o)
	repoMap, err := repomap.Section(ctx, o.Map([]string{goal}))
	if err != nil {
		s.logger.Warn("repo map unavailable", "err", err)
	}
	mapped()
	// The planner looks, never changes: only the MCP tools the server
	// marks readOnlyHint (or mcp_read_only names). It runs here, so the
	// servers run on this machine whatever the runtime.
	servers := toolset.Servers(s.cfg, ws.Root(), s.f.Getenv)
	defer func() { _ = servers.Close() }()
	if set, err = toolset.WithMCP(ctx, set, servers, true, func(line string) { s.logger.Warn(line) }); err != nil {
		return nil, llm.Usage{}, cmdutil.UsageError(err)
	}
	// The project's own instructions, as each task gets them in its
	// project layer (codingagent reads them from its copy).
	doc, found, err := projectdoc.Read(ws.Root())
	if err != nil {
		s.logger.Warn("the project's instructions are left out", "err", err)
	}
	instructions := ""
	if found {
		instructions = doc.Name + ":\n" + doc.Body()
	}
	planner := plan.NewPlanner(client, set, plan.Options{
		Events: sink, WorkspaceView: workspaceView(ctx, ws.Files()), RepoMap: repoMap, ProjectDoc: instructions,
	})
	p, usage, err := planner.Plan(ctx, goal)
	if err != nil {
		if ctx.Err() != nil {
			return nil, usage, ctx.Err()
		}
		return nil, usage, cmdutil.UsageError(err)
	}
	return p, usage, nil
}

// repoMapCache makes the repo map's cache dir through a root on the
// volumes: the agents can write context/, and a link planted as the cache
// dir would have the planner's map written where it points. A link there is
// replaced, logged. "" (no cache) when the map is off or the dir cannot be
// made.
func (s *session) repoMapCache() (string, error) {
	if s.cfg.RepoMapTokens <= 0 {
		return "", nil
	}
	root, err := safefs.OpenRoot(s.layout.Root, s.logger)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(s.layout.RepoMapCache()); err != nil {
		return "", err
	}
	return s.layout.RepoMapCache(), nil
}

// renderPlan is the plan as a person reads it before saying yes.
func renderPlan(p *plan.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan: %s\n", p.Title)
	if p.Overview != "" {
		fmt.Fprintf(&b, "%s\n", strings.TrimSpace(p.Overview))
	}
	b.WriteString("\n")
	for i, t := range p.Tasks {
		deps := ""
		if len(t.Dependencies) > 0 {
			deps = " (after " + strings.Join(t.Dependencies, ", ") + ")"
		}
		title := t.Title
		if title == "" {
			title = strings.SplitN(strings.TrimSpace(t.Description), "\n", 2)[0]
		}
		fmt.Fprintf(&b, "%2d. %s: %s%s\n", i+1, t.ID, title, deps)
		for _, a := range t.Acceptance {
			fmt.Fprintf(&b, "      accept: %s\n", a)
		}
		if t.Attempts > 1 {
			fmt.Fprintf(&b, "      attempts: %d\n", t.Attempts)
		}
	}
	return b.String()
}

// workspaceView is the shallow listing the planner starts from: the
// root's entries and those one level down, as the coding tools see them.
func workspaceView(ctx context.Context, files *filetree.Tree) string {
	const maxEntries = 200
	var b strings.Builder
	n := 0
	_ = files.Walk(ctx, "", func(rel string, d fs.DirEntry) error {
		depth := strings.Count(rel, "/")
		if n++; n > maxEntries {
			return fs.SkipAll
		}
		name := d.Name()
		if d.IsDir() {
			name += "/"
		}
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), name)
		if d.IsDir() && depth == 1 {
			return fs.SkipDir
		}
		return nil
	})
	if b.Len() == 0 {
		return "(the workspace is empty)"
	}
	if n > maxEntries {
		fmt.Fprintf(&b, "… (listing cut at %d entries)\n", maxEntries)
	}
	return b.String()
}
