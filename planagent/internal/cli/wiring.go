package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/fswatch"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/docker"
	"github.com/codeagent/codeagent/planagent/internal/runtime/kube"
	"github.com/codeagent/codeagent/planagent/internal/runtime/local"
)

// session is what run, plan, status and resume share once flags are parsed.
type session struct {
	f       *cmdutil.Factory
	cfg     config.Config
	file    string
	layout  volume.Layout
	logger  *slog.Logger
	logs    *logView // planagent's and the coding agent's log lines, one format
	verbose bool     // the watcher's INFO log lines and planagent's own
	// volumesFlag is " --volumes DIR" when the flag named the volumes
	// (hints repeat it), else "".
	volumesFlag string
	// runBudget is the budget of the run being driven (run and resume set it).
	runBudget orchestrator.Budget
	// repo holds the checkpoints of the run being driven (run and resume set it).
	repo *checkpoint.Repo
	// watch opens the process's file watchers: one warning when none can
	// be had, and polling.
	watch *fswatch.Opener
	// gateway is the run's model gateway (docker, local, kubernetes),
	// nil without one; the orchestrator counts the agents' tokens there.
	gateway *gateway.Gateway
	// refusals is what the egress proxy turned away, per attempt, for the
	// tasks' results.
	refusals egressRecord
	// events hears what the runtime reports during the run (the egress
	// proxy's refusals); run sets it before building the runtime.
	events events.Sink
	// boundary is what the runtime's start-of-run probe found.
	boundary string
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
	if err := layout.CheckWorkspace(); err != nil {
		return nil, cmdutil.UsageError(err)
	}
	verbose, _ := cmd.Flags().GetBool("verbose")
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	logs := newLogView(f.IO.Err)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	s := &session{f: f, cfg: l.Config, file: l.File, layout: layout, logger: logger, logs: logs, verbose: verbose,
		watch: &fswatch.Opener{New: newWatcher(f.Getenv), Logger: logger}}
	// Volumes named by the flag are not remembered anywhere: the hints a
	// command prints repeat the flag, so they work as printed.
	if strings.HasPrefix(string(l.Sources["volumes_dir"]), "flag") {
		s.volumesFlag = " --volumes " + shellQuote(layout.Root)
	}
	return s, nil
}

// ref is how a hint names a run: its id, and --volumes when the volumes
// came from the flag.
func (s *session) ref(runID string) string { return runID + s.volumesFlag }

// shellQuote quotes a path for a command line a person copies.
func shellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// ensureVolumes makes the volumes tree, for the commands that write to it
// (run, resume, plan, ui): one that only reads (status, runs, graph, diff,
// rollback) must not leave a volumes/ directory behind in the current one.
func (s *session) ensureVolumes() error {
	if err := s.layout.Ensure(); err != nil {
		return cmdutil.UsageError(fmt.Errorf("%w (check --volumes)", err))
	}
	return nil
}

// settings are the options of a new run that resume must keep.
func (s *session) settings() *runrecord.Settings {
	return &runrecord.Settings{Runtime: s.cfg.Runtime, Workspace: s.layout.Workspace(), Image: s.cfg.Image,
		Parallel: s.cfg.Parallel, MaxRetries: s.cfg.MaxRetries, TaskTimeout: s.cfg.TaskTimeout,
		Model: s.cfg.Model, BudgetTokens: s.cfg.BudgetTokens, BudgetTime: s.cfg.BudgetTime, BudgetUSD: s.cfg.BudgetUSD,
		TaskBudgetTokens: s.cfg.TaskBudgetTokens,
		Attempts:         s.cfg.Attempts, AttemptPolicy: s.cfg.AttemptPolicy, FirstPassWins: s.cfg.FirstPassWins, Judge: s.cfg.Judge}
}

// addSettingFlags adds the settings run and resume take as flags, from the
// config table (names, help and defaults written there once). resume's
// flags of the settings a run saved (runrecord.Settings) say that, not
// given, the run keeps what it was started with: resumeWith applies them.
func addSettingFlags(cmd *cobra.Command, resume bool) {
	fl := cmd.Flags()
	saved := []string{"runtime", "image", "parallel", "max_retries", "budget_tokens", "budget_time", "budget_usd",
		"attempts", "attempt_policy", "first_pass_wins", "judge"}
	if resume {
		cmdutil.KeptSettingFlags(fl, "as the run was started", saved...)
	} else {
		cmdutil.SettingFlags(fl, saved...)
	}
	cmdutil.SettingFlags(fl, "kube_namespace", "kubeconfig", "kube_context", "kube_secret", "include_ignored", "setup_command", "egress")
	cmdutil.CompleteValues(cmd, "runtime", "docker", "local", "kubernetes")
}

// resumeWith makes the session continue a run with the settings it was
// started with; a flag given to resume overrides the saved value.
func (s *session) resumeWith(cmd *cobra.Command, saved *runrecord.Settings) error {
	if saved == nil {
		return nil
	}
	set := cmd.Flags().Changed
	if saved.Runtime != "" && !set("runtime") {
		s.cfg.Runtime = saved.Runtime
	}
	if saved.Image != "" && !set("image") {
		s.cfg.Image = saved.Image
	}
	if saved.Parallel > 0 && !set("parallel") {
		s.cfg.Parallel = saved.Parallel
	}
	if !set("max-retries") {
		s.cfg.MaxRetries = saved.MaxRetries
	}
	// A run keeps how its tasks' attempts run: a resume that changed the
	// policy under attempts in flight would judge them by other rules.
	if saved.Attempts > 0 && !set("attempts") {
		s.cfg.Attempts = saved.Attempts
	}
	if saved.AttemptPolicy != "" && !set("attempt-policy") {
		s.cfg.AttemptPolicy = saved.AttemptPolicy
	}
	if !set("first-pass-wins") {
		s.cfg.FirstPassWins = saved.FirstPassWins
	}
	if !set("judge") {
		s.cfg.Judge = saved.Judge
	}
	if saved.TaskTimeout > 0 {
		s.cfg.TaskTimeout = saved.TaskTimeout
	}
	// A budget flag given to resume is the run's new budget (a total, not
	// an addition); without one the run keeps the budget it had.
	if !set("budget-tokens") {
		s.cfg.BudgetTokens = saved.BudgetTokens
	}
	if !set("budget-time") {
		s.cfg.BudgetTime = saved.BudgetTime
	}
	if !set("budget-usd") {
		s.cfg.BudgetUSD = saved.BudgetUSD
	}
	if saved.TaskBudgetTokens > 0 && s.cfg.TaskBudgetTokens == 0 {
		s.cfg.TaskBudgetTokens = saved.TaskBudgetTokens
	}
	saved.BudgetTokens, saved.BudgetTime, saved.BudgetUSD = s.cfg.BudgetTokens, s.cfg.BudgetTime, s.cfg.BudgetUSD
	saved.TaskBudgetTokens = s.cfg.TaskBudgetTokens
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
// its process environment only (never a file): config.AgentEnv, plus the
// workspace exclusion and the MCP servers.
func (s *session) agentEnv() map[string]string {
	env := config.AgentEnv(&s.cfg)
	// In a container the agent cannot tell that part of its workspace is
	// our volumes dir.
	env[config.EnvWorkspaceExclude] = s.volumesInWorkspace()
	s.addMCPEnv(env)
	// The agent exports its spans where planagent does (the runtime makes
	// a loopback endpoint reachable from a container).
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") && v != "" {
			env[k] = v
		}
	}
	return env
}

// volumesInWorkspace is the volumes dir relative to the workspace when it
// lies inside it (`--workspace .` in the project), else "".
func (s *session) volumesInWorkspace() string {
	rel, _ := s.layout.VolumesInWorkspace()
	return filepath.ToSlash(rel)
}

// announce prints where the run works, first, and warns when the volumes
// dir lies inside the workspace.
func (s *session) announce(w io.Writer) {
	fmt.Fprintf(w, "workspace: %s\n", s.layout.Workspace())
	if rel := s.volumesInWorkspace(); rel != "" {
		fmt.Fprintf(w, "warning: the volumes dir %s is inside the workspace: the agent's tools leave %s/ out; add /%s/ to the workspace's .gitignore so it is never committed\n",
			s.layout.Root, rel, rel)
	}
}

// addMCPEnv gives the watcher mcp_servers (as JSON, ${VAR} references
// unexpanded), mcp_read_only, and the variables the references name, so
// the servers start where the agent runs (in the docker runtime, inside
// the task's container) with the operator's values.
func (s *session) addMCPEnv(env map[string]string) {
	servers, err := config.EncodeMCPServers(s.cfg.MCPServers)
	if err != nil || servers == "" {
		return // plain strings always encode; none configured means nothing to pass
	}
	env[config.EnvMCPServers] = servers
	env[config.EnvMCPReadOnly] = strings.Join(s.cfg.MCPReadOnly, ",")
	for _, name := range config.MCPVarRefs(s.cfg.MCPServers) {
		if v := s.f.Getenv(name); v != "" {
			env[name] = v
		}
	}
}

// cli is where the runtimes and the interface that drives them meet: each
// runtime cli builds is an orchestrator.Runtime, checked here at compile time.
var (
	_ orchestrator.Runtime = (*docker.Docker)(nil)
	_ orchestrator.Runtime = (*kube.Kube)(nil)
	_ orchestrator.Runtime = (*local.Local)(nil)
)

// runtime builds the configured runtime; an unusable one is a usage error (exit 2).
func (s *session) runtime(ctx context.Context, runID string, log io.Writer) (orchestrator.Runtime, error) {
	env := s.agentEnv()
	switch s.cfg.Runtime {
	case "local":
		// The model gateway keeps the key in planagent: the watcher gets a
		// token on its pipe. The gateway serves as long as planagent runs.
		gw, err := s.modelGateway(env)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		var kv []string
		for k, v := range env {
			if v != "" && k != config.APIKeyEnv {
				kv = append(kv, k+"="+v)
			}
		}
		policy, err := s.egressPolicy()
		if err != nil {
			return nil, err
		}
		proxyEnv, err := s.localEgressProxy(policy, runID)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		kv = append(kv, proxyEnv...)
		sort.Strings(kv)
		opts := local.Options{Volumes: s.layout, Executable: s.f.Executable,
			Env: kv, Log: log, Logger: s.logger, Verbose: s.verbose, Watch: s.watch}
		if gw != nil {
			opts.Gateway = gw // only when there is one: a nil *Gateway is no nil interface
		} else {
			opts.APIKey = env[config.APIKeyEnv]
		}
		rt, err := local.New(opts)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		return rt, nil
	case "kubernetes":
		// The model gateway keeps the key in planagent (kube.go).
		rt, err := newKubeRuntime(ctx, s, runID, env, log)
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
	return nil, cmdutil.UsageError(fmt.Errorf("unknown runtime %q: use docker, local or kubernetes", s.cfg.Runtime))
}

// llm is the client of the planner and the decider; retries are logged, so a
// long Retry-After does not look like a hang.
func (s *session) llm() *llmclient.Client {
	return s.f.LLMWithRetries(s.cfg, func(attempt int, wait time.Duration, err error) {
		s.logger.Warn(cmdutil.RetryText(attempt, s.cfg.Retries, wait, err))
	})
}

// needKey refuses a run without an API key before anything is checked,
// made or started: every task needs the model.
func (s *session) needKey() error {
	if s.cfg.APIKey == "" {
		return cmdutil.UsageError(llm.ErrNoAPIKey)
	}
	return nil
}
