package cli

import (
	"context"
	"fmt"
	"github.com/codeagent/codeagent/internal/llm"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runtime"
)

// session is what run, plan, status and resume share once flags are parsed.
type session struct {
	f       *cmdutil.Factory
	cfg     config.Config
	file    string
	layout  volume.Layout
	logger  *slog.Logger
	verbose bool // the watcher's INFO log lines and planagent's own
}

func newSession(f *cmdutil.Factory, cmd *cobra.Command) (*session, error) {
	l, err := f.Config(cmd)
	if err != nil {
		return nil, err
	}
	layout, err := volume.New(l.VolumesDir, l.WorkspaceDir)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	if err := layout.Ensure(); err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("%w (check --volumes)", err))
	}
	verbose, _ := cmd.Flags().GetBool("verbose")
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(f.IO.Err, &slog.HandlerOptions{Level: level}))
	return &session{f: f, cfg: l.Config, file: l.File, layout: layout, logger: logger, verbose: verbose}, nil
}

// settings are the options of a new run that resume must keep.
func (s *session) settings() *orchestrator.Settings {
	return &orchestrator.Settings{Runtime: s.cfg.Runtime, Workspace: s.layout.Workspace(),
		Parallel: s.cfg.Parallel, MaxRetries: s.cfg.MaxRetries, TaskTimeout: s.cfg.TaskTimeout}
}

// resumeWith makes the session continue a run with the settings it was
// started with; a flag given to resume overrides the saved value.
func (s *session) resumeWith(cmd *cobra.Command, saved *orchestrator.Settings) error {
	if saved == nil {
		return nil
	}
	set := cmd.Flags().Changed
	if saved.Runtime != "" && !set("runtime") {
		s.cfg.Runtime = saved.Runtime
	}
	if saved.Parallel > 0 && !set("parallel") {
		s.cfg.Parallel = saved.Parallel
	}
	if !set("max-retries") {
		s.cfg.MaxRetries = saved.MaxRetries
	}
	if saved.TaskTimeout > 0 {
		s.cfg.TaskTimeout = saved.TaskTimeout
	}
	if saved.Workspace != "" && !set("workspace") {
		layout, err := volume.New(s.layout.Root, saved.Workspace)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		if fi, err := os.Stat(saved.Workspace); err != nil || !fi.IsDir() {
			return cmdutil.UsageError(fmt.Errorf("the run's workspace %s is gone: restore it or pass --workspace DIR", saved.Workspace))
		}
		s.layout = layout
	}
	return nil
}

// sink renders events: JSON lines on stdout for CI, one line per step on stderr for people.
func (s *session) sink(jsonOut bool) events.Sink {
	if jsonOut {
		return events.NewJSON(s.f.IO.Out)
	}
	return events.NewText(s.f.IO.Err)
}

// agentEnv carries the effective LLM and agent settings to the watcher, in
// its process environment only (never a file).
func (s *session) agentEnv() map[string]string {
	c := s.cfg
	return map[string]string{
		"OPENAI_API_KEY":                 c.APIKey,
		"OPENAI_BASE_URL":                c.BaseURL,
		"OPENAI_MODEL":                   c.Model,
		"CODEAGENT_SUMMARY_MODEL":        c.SummaryModel,
		"CODEAGENT_CONTEXT_WINDOW":       strconv.Itoa(c.ContextWindow),
		"CODEAGENT_RESERVED_OUTPUT":      strconv.Itoa(c.ReservedOutput),
		"CODEAGENT_MAX_ITERATIONS":       strconv.Itoa(c.MaxIterations),
		"CODEAGENT_RETRIES":              strconv.Itoa(c.Retries),
		"CODEAGENT_REQUEST_TIMEOUT":      c.RequestTimeout.String(),
		"CODEAGENT_COMPACTION_THRESHOLD": strconv.FormatFloat(c.CompactionThreshold, 'f', -1, 64),
		"CODEAGENT_KEEP_MESSAGES":        strconv.Itoa(c.KeepMessages),
		"CODEAGENT_PARALLEL":             strconv.Itoa(c.Parallel),
		"CODEAGENT_REPO_MAP_TOKENS":      strconv.Itoa(c.RepoMapTokens),
		"CODEAGENT_TASK_TIMEOUT":         c.TaskTimeout.String(),
	}
}

// runtime builds the configured runtime; an unusable one is a usage error (exit 2).
func (s *session) runtime(ctx context.Context, runID string, log io.Writer) (runtime.Runtime, error) {
	env := s.agentEnv()
	switch s.cfg.Runtime {
	case "local":
		var kv []string
		for k, v := range env {
			if v != "" {
				kv = append(kv, k+"="+v)
			}
		}
		sort.Strings(kv)
		rt, err := runtime.NewLocal(runtime.LocalOptions{Volumes: s.layout, Executable: s.f.Executable,
			Env: kv, Log: log, Logger: s.logger, Verbose: s.verbose})
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		return rt, nil
	case "docker":
		rt, err := newDockerRuntime(ctx, s, runID, env, log)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		return rt, nil
	}
	return nil, cmdutil.UsageError(fmt.Errorf("unknown runtime %q: use docker or local", s.cfg.Runtime))
}

// workspaceView is the shallow listing the planner starts from.
func workspaceView(root string) string {
	var b strings.Builder
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		depth := strings.Count(rel, string(filepath.Separator))
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "node_modules" || name == "vendor" || name == ".venv") {
			return filepath.SkipDir
		}
		if depth > 1 {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > 200 {
			return filepath.SkipAll
		}
		if d.IsDir() {
			name += "/"
		}
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), name)
		return nil
	})
	if b.Len() == 0 {
		return "(the workspace is empty)"
	}
	if n > 200 {
		b.WriteString("… (listing cut at 200 entries)\n")
	}
	return b.String()
}

// llm is the client of the planner and the decider; retries are logged, so a
// long Retry-After does not look like a hang.
func (s *session) llm() *llm.Client {
	return s.f.LLMWithRetries(s.cfg, func(attempt int, wait time.Duration, err error) {
		s.logger.Warn(cmdutil.RetryText(attempt, s.cfg.Retries, wait, err))
	})
}
