package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/layers"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
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
	tools         *tools.Set
	repoMap       func(focus []string) string // nil when repo_map_tokens is 0
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
	layout, err := volume.New(cfg.VolumesDir, cfg.WorkspaceDir)
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
	if err := os.MkdirAll(layout.Sessions(), 0o755); err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("create sessions dir %s: %w (check --volumes)", layout.Sessions(), err))
	}
	// The same global and project layers the watcher gives its tasks.
	systemContext, err := layers.Combine(layers.Options{RuntimeDir: layout.Context()})
	if err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("combine the context layers under %s: %w", layout.Context(), err))
	}
	return &agentSetup{cfg: cfg, warnings: l.Warnings, layout: layout, ws: ws, systemContext: systemContext,
		// Shell output never carries the key into the session log or the model.
		tools: tools.Coding(ws, tools.Options{Secrets: []string{cfg.APIKey}})}, nil
}

// addRepoMap offers the repo_map tool and puts the map, boosted by boost and
// the agent's focused files, in the system prompt — unless repo_map_tokens
// is 0. The first failure to map goes to onErr.
func (s *agentSetup) addRepoMap(boost []string, onErr func(error)) {
	if s.cfg.RepoMapTokens <= 0 {
		return
	}
	s.tools = s.tools.With(tools.NewRepoMap(s.ws, s.layout.RepoMapCache()))
	s.repoMap = repomap.Prompter(repomap.Options{Root: s.ws.Root(), CacheDir: s.layout.RepoMapCache(),
		Tokens: s.cfg.RepoMapTokens, Boost: boost}, onErr)
}
