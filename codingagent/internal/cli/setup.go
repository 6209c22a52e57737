package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/layers"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/mcp"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/internal/volume"
)

// agentSetup is what exec and chat share before they build an agent: the
// effective settings, the volumes, the workspace, the combined context layers
// and the tool set.
type agentSetup struct {
	cfg           config.Config
	warnings      []string
	layout        volume.Layout
	ws            *tools.Workspace
	systemContext string
	toolset       toolset.Options
	tools         *tools.Set
	repoMap       func(ctx context.Context, focus []string) string // nil when repo_map_tokens is 0
	mcp           *mcp.Manager
}

func newAgentSetup(f *cmdutil.Factory, cmd *cobra.Command) (*agentSetup, error) {
	l, err := f.Config(cmd)
	if err != nil {
		return nil, err
	}
	cfg := l.Config
	if cfg.APIKey == "" {
		return nil, cmdutil.UsageError(errors.New("no API key: set OPENAI_API_KEY (or api_key in the config file); a server that needs none accepts any value"))
	}
	vols, err := volumesFor(l, f.Getenv)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	layout, err := volume.New(vols, cfg.WorkspaceDir)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	if cfg.WorkspaceDir == "" {
		// The default workspace is ours to create; one the user named must exist.
		if err := os.MkdirAll(layout.Workspace(), 0o755); err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("create workspace %s: %w (check --volumes)", layout.Workspace(), err))
		}
	}
	ws, err := tools.NewWorkspace(layout.Workspace())
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	ws.Exclude(workspaceExclude(f, layout)...)
	if err := os.MkdirAll(layout.Sessions(), 0o755); err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("create sessions dir %s: %w (check --volumes)", layout.Sessions(), err))
	}
	// The same global and project layers the watcher gives its tasks.
	systemContext, err := layers.Combine(layers.Options{RuntimeDir: layout.Context(), Workspace: ws.Root()})
	if err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("combine the context layers under %s: %w", layout.Context(), err))
	}
	servers := toolset.Servers(cfg, ws.Root(), f.Getenv)
	o := toolset.Options{Workspace: ws, Shell: shellOptions(cfg, servers), RepoMapTokens: cfg.RepoMapTokens, RepoMapCache: layout.RepoMapCache()}
	return &agentSetup{cfg: cfg, warnings: l.Warnings, layout: layout, ws: ws, systemContext: systemContext, mcp: servers,
		toolset: o, tools: toolset.New(o)}, nil
}

// volumesFor is the volumes dir of an agent run: the configured one, but
// with --workspace given and no volumes dir named, one outside the project
// (as Claude Code and Codex keep theirs under the home directory):
// $XDG_STATE_HOME/codeagent/workspaces/<name>-<hash of its path>, else
// ~/.local/state/…, else the project's .git/codeagent. A volumes/ dir
// written into the project would be the user's to clean up, and the next
// `planagent run` there refuses it as an uncommitted change.
func volumesFor(l *config.Loaded, getenv func(string) string) (string, error) {
	if l.WorkspaceDir == "" || l.Sources["volumes_dir"] != config.SourceDefault {
		return l.VolumesDir, nil
	}
	if fi, err := os.Stat(l.VolumesDir); err == nil && fi.IsDir() {
		return l.VolumesDir, nil // a volumes tree here already: it is meant
	}
	ws, err := filepath.Abs(l.WorkspaceDir)
	if err != nil {
		return "", err
	}
	state := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) {
		state = ""
		if home := getenv("HOME"); filepath.IsAbs(home) {
			state = filepath.Join(home, ".local", "state")
		}
	}
	if state != "" {
		sum := sha256.Sum256([]byte(ws))
		return filepath.Join(state, "codeagent", "workspaces", filepath.Base(ws)+"-"+hex.EncodeToString(sum[:4])), nil
	}
	if fi, err := os.Stat(filepath.Join(ws, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(ws, ".git", "codeagent"), nil
	}
	return "", fmt.Errorf("no place outside %s for the agent's sessions and memory: set HOME or XDG_STATE_HOME, or name one with --volumes", ws)
}

// shellOptions keep the key and the MCP servers' secrets from the model:
// shell output never carries them into the session log or the model, and
// the shell's environment has neither the servers' settings nor the
// variables they refer to, nor the traces' exporter headers (a collector's
// token).
func shellOptions(cfg config.Config, servers *mcp.Manager) tools.Options {
	hide := append([]string{config.EnvMCPServers, "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		config.MCPVarRefs(cfg.MCPServers)...)
	return tools.Options{Secrets: append([]string{cfg.APIKey}, servers.Secrets()...), HideEnv: hide}
}

// addMCP starts the MCP servers and offers their tools. A server that does
// not start is one line to warn; tool names that collide are a
// configuration error.
func (s *agentSetup) addMCP(ctx context.Context, warn func(string)) error {
	set, err := toolset.WithMCP(ctx, s.tools, s.mcp, false, warn)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	s.tools = set
	return nil
}

// close stops the MCP servers.
func (s *agentSetup) close() { _ = s.mcp.Close() }

// workspaceExclude is what the agent's tools leave out of the workspace:
// the volumes dir when it lies inside it, and what planagent names.
func workspaceExclude(f *cmdutil.Factory, layout volume.Layout) []string {
	var dirs []string
	if rel, ok := layout.VolumesInWorkspace(); ok {
		dirs = append(dirs, rel)
	}
	for _, d := range strings.Split(f.Getenv(config.EnvWorkspaceExclude), ",") {
		if d = strings.TrimSpace(d); d != "" && filepath.IsLocal(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// addRepoMap puts the map, boosted by boost and the agent's focused files,
// in the system prompt (the set already has repo_map) — unless
// repo_map_tokens is 0. The first failure to map goes to onErr.
func (s *agentSetup) addRepoMap(boost []string, onErr func(error)) {
	if s.cfg.RepoMapTokens <= 0 {
		return
	}
	s.repoMap = repomap.Prompter(s.toolset.Map(boost), onErr)
}
