package cli

import (
	"context"
	"fmt"

	"github.com/codeagent/codeagent/internal/catalog"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/probe"
)

// checkServer asks a local model server (Ollama, vLLM, llama.cpp, LM
// Studio) what context it serves, before the first model call: a window
// smaller than the agent's first request is a configuration error (exit 2)
// naming the server setting to change; one smaller than context_window
// becomes the run's window, so compaction happens before the server cuts
// the prompt. The APIs the catalog lists are not asked, nor is a server
// that answers no probe.
func (s *session) checkServer(ctx context.Context) error {
	if catalog.KnownAPI(s.cfg.BaseURL) {
		return nil
	}
	w := probe.Probe(ctx, probe.Options{BaseURL: s.cfg.BaseURL, Model: s.cfg.Model, APIKey: s.cfg.APIKey})
	if w == nil {
		return nil
	}
	if err := probe.Check(w, probe.Need{RepoMap: s.cfg.RepoMapTokens, ReservedOutput: s.cfg.ReservedOutput}); err != nil {
		return cmdutil.UsageError(err)
	}
	if w.Loaded && w.Context < s.cfg.ContextWindow {
		fmt.Fprintf(s.f.IO.Err, "%s serves %s with a %d-token context: the run uses it as context_window (configured %d)\n",
			w.Server, w.Model, w.Context, s.cfg.ContextWindow)
		s.cfg.ContextWindow = w.Context
	}
	return nil
}
