package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/mcp"
	"github.com/codeagent/codeagent/internal/projectdoc"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/planagent/internal/notify"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// makePlan runs the planner over the workspace.
// mapped is called once the repo map is made, before the model is asked.
func makePlan(ctx context.Context, s *session, client *llm.Client, goal string, sink events.Sink, mapped func()) (*plan.Plan, llm.Usage, error) {
	ws, err := tools.NewWorkspace(s.layout.Workspace())
	if err != nil {
		return nil, llm.Usage{}, cmdutil.UsageError(fmt.Errorf("workspace: %w", err))
	}
	if rel := s.volumesInWorkspace(); rel != "" {
		ws.Exclude(rel)
	}
	set := tools.ReadOnly(ws)
	var repoMap string
	if s.cfg.RepoMapTokens > 0 {
		set = set.With(tools.NewRepoMap(ws, s.layout.RepoMapCache()))
		var err error
		repoMap, err = repomap.Section(ctx, repomap.Options{Root: ws.Root(), Exclude: ws.ExcludePatterns(), CacheDir: s.layout.RepoMapCache(),
			Tokens: s.cfg.RepoMapTokens, Boost: []string{goal}})
		if err != nil {
			s.logger.Warn("repo map unavailable", "err", err)
		}
	}
	mapped()
	if len(s.cfg.MCPServers) > 0 {
		// The planner looks, never changes: only the MCP tools the server
		// marks readOnlyHint (or mcp_read_only names). It runs here, so
		// the servers run on this machine whatever the runtime.
		servers := mcp.New(mcp.Options{Servers: s.cfg.MCPServers, ReadOnly: s.cfg.MCPReadOnly, Dir: ws.Root(),
			Getenv: s.f.Getenv, Secrets: []string{s.cfg.APIKey}})
		defer func() { _ = servers.Close() }()
		st := servers.Start(ctx)
		for _, line := range append(st.Failures(), st.Warnings...) {
			s.logger.Warn(line)
		}
		if st.Err != nil {
			return nil, llm.Usage{}, cmdutil.UsageError(st.Err)
		}
		for _, t := range st.Tools {
			if t.ReadOnly() {
				set = set.With(t)
			}
		}
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
	}
	return b.String()
}

func runRun(cmd *cobra.Command, f *cmdutil.Factory, opts *RunOptions) error {
	ctx := cmd.Context()
	var filePlan *plan.Plan
	if opts.PlanFile != "" {
		// Read first: a bad file costs neither a runtime check nor a model call.
		p, err := plan.ReadFile(opts.PlanFile)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		filePlan = p
		if strings.TrimSpace(opts.Goal) == "" {
			opts.Goal = p.Title
			if strings.TrimSpace(opts.Goal) == "" {
				opts.Goal = "plan " + opts.PlanFile
			}
		}
	}
	if strings.TrimSpace(opts.Goal) == "" {
		return cmdutil.UsageError(errors.New("the goal is empty: say what to do, e.g. planagent run \"add a health check endpoint\""))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	if err := s.needKey(); err != nil {
		return err
	}
	if err := s.ensureVolumes(); err != nil {
		return err
	}
	// A USD budget without prices is refused before anything costs money.
	if s.runBudget, err = s.budget(s.cfg.Model); err != nil {
		return err
	}
	// A local server too small for the agent is refused before planning.
	if err := s.checkServer(ctx); err != nil {
		return err
	}
	notifier := notify.New(s.cfg.Notify, s.logger)
	defer notifier.Wait()
	sink := notify.Sink(ctx, s.sink(opts.JSON), notifier, opts.Goal)
	runID := runrecord.NewRunID(time.Now())
	ctx, span := traceRun(ctx, runID, "")
	defer span.End()
	// The web view's address is taken before planning, so a busy port costs
	// no LLM call; it serves once the run's state exists.
	var ui net.Listener
	if opts.UI {
		if ui, err = s.listenUI(opts.UIAddr); err != nil {
			return err
		}
		defer ui.Close()
	}
	// The runtime is checked before planning so a missing engine or binary
	// costs no LLM call.
	rt, err := s.runtime(ctx, runID, s.logs)
	if err != nil {
		return err
	}
	// First after the checks that can refuse the run in one line.
	s.announce(f.IO.Err)
	// Uncommitted work is refused before planning costs anything.
	repo, checkpoints, err := s.startCheckpoints(ctx, f.IO.Err)
	if err != nil {
		return err
	}
	s.repo = repo
	asks := !opts.Yes && f.IO.IsTerminal != nil && f.IO.IsTerminal()
	stopPrewarm := func(bool) {}
	defer func() { stopPrewarm(false) }()
	startPrewarm := func() { stopPrewarm = s.prewarm(ctx, repo, checkpoints.Head) }
	client := s.llm()
	// The run announces the accepted plan itself, with its run id and the
	// plan; the planner's own plan_created would be a second one.
	plannerSink := events.Func(func(e events.Event) {
		if e.Type != events.PlanCreated {
			if e.RunID == "" {
				e.RunID = runID // planning belongs to the run too (--json consumers group by it)
			}
			sink.Emit(e)
		}
	})
	// The attempts' first copies are made while the model plans and the
	// plan awaits confirmation; not during the repo map, which they would
	// slow down, and not when nothing waits (a plan file run with --yes).
	p, usage := filePlan, llm.Usage{}
	if p == nil {
		if p, usage, err = makePlan(ctx, s, client, opts.Goal, plannerSink, startPrewarm); err != nil {
			return err
		}
	} else if asks {
		startPrewarm()
	}
	if !opts.JSON {
		fmt.Fprint(f.IO.Err, renderPlan(p)+budgetLine(s.cfg))
	}
	if asks {
		notifier.Send(ctx, notify.Event{Kind: "plan_awaiting", RunID: runID, Goal: opts.Goal,
			Text: fmt.Sprintf("the plan of %q (%d tasks) awaits your confirmation", opts.Goal, len(p.Tasks))})
		fmt.Fprint(f.IO.Err, "\nProceed? [Y/n] ")
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "" && a != "y" && a != "yes" {
			fmt.Fprintln(f.IO.Err, "Not run.")
			return cmdutil.Silent(cmdutil.ExitOK)
		}
	}
	st, err := runrecord.NewState(runID, opts.Goal, p, usage, time.Now())
	if err != nil {
		return cmdutil.UsageError(err)
	}
	st.Settings = s.settings()
	st.Checkpoints = checkpoints
	st.TraceParent = telemetry.TraceParent(ctx)
	lock, err := runlock.Acquire(s.layout.Run(runID))
	if err != nil {
		return cmdutil.UsageError(err)
	}
	defer lock.Release()
	if err := st.Save(s.layout, time.Now()); err != nil {
		return err
	}
	sink.Emit(events.Event{Type: events.PlanCreated, RunID: runID, Text: p.Title,
		Data: map[string]any{"tasks": len(p.Tasks), "plan": p}})
	defer s.startUI(ctx, ui, runID)()
	stopPrewarm(true)
	return drive(ctx, s, st, rt, client, sink, opts.JSON)
}

// drive runs the orchestrator and reports the outcome; shared by run and resume.
func drive(ctx context.Context, s *session, st *runrecord.State, rt orchestrator.Runtime, client *llm.Client, sink events.Sink, jsonOut bool) error {
	now, driven := watchInterrupts(ctx, s.f.IO.Err)
	o := orchestrator.New(orchestrator.Options{
		Layout: s.layout, Runtime: stopNowRuntime{Runtime: rt, now: now}, Events: sink, Logger: s.logger,
		Decider:  &orchestrator.LLMDecider{Client: client, Model: s.cfg.Model},
		Parallel: s.cfg.Parallel, MaxRetries: s.cfg.MaxRetries, TaskTimeout: s.cfg.TaskTimeout,
		SetupCommand: s.cfg.SetupCommand,
		Budget:       s.runBudget, Repo: repoOption(s.repo), Failpoint: failpoint(), Watch: s.watch,
	})
	defer s.logs.Flush()
	err := o.Drive(ctx, st)
	driven()
	if err != nil && !errors.Is(err, context.Canceled) {
		// The run could not go on (the engine, the disk, the workspace):
		// scripts hear it as setup_error; the run stays resumable.
		st.Stop = &runrecord.Stop{Reason: runrecord.StopSetupError, Detail: err.Error()}
		sink.Emit(runEnd(st, runview.Build(st, s.viewOptions()), s.layout.Summary()))
		var ee *cmdutil.ExitError
		if !errors.As(err, &ee) {
			err = cmdutil.UsageError(err)
		}
		return err
	}
	view := runview.Build(st, s.viewOptions())
	if werr := protocol.WriteFileAtomic(s.layout.Summary(), []byte(runview.Markdown(view)), 0o644); werr != nil {
		s.logger.Warn("write summary", "err", werr)
	}
	sink.Emit(runEnd(st, view, s.layout.Summary()))
	if !jsonOut {
		fmt.Fprint(s.f.IO.Out, "\n"+runview.Summary(view))
	}
	switch {
	case err != nil || st.Status == runrecord.RunInterrupted:
		fmt.Fprintf(s.f.IO.Err, "interrupted: continue with `planagent resume %s`\n", s.ref(st.RunID))
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case st.ConfigError != "":
		// The model server cannot serve the agent as configured: the
		// fix is a setting, as for any configuration error (exit 2).
		return cmdutil.UsageError(fmt.Errorf("%s (then continue with `planagent resume %s`)", st.ConfigError, st.RunID))
	case st.Status == runrecord.RunPaused:
		fmt.Fprintf(s.f.IO.Err, "paused: %s. Continue with a larger budget: `planagent resume %s %s`\n",
			st.Paused, s.ref(st.RunID), budgetFlag(st.Stop))
		return cmdutil.Silent(cmdutil.ExitPaused)
	case st.Status == runrecord.RunCompleted:
		return nil
	default:
		if st.Stop != nil && len(st.Stop.Tasks) > 0 {
			fmt.Fprintf(s.f.IO.Err, "failed: %s. Try them again with `planagent resume %s --retry-failed` (look first with `planagent diff %s` or `planagent status %s`)\n",
				strings.Join(st.Stop.Tasks, ", "), s.ref(st.RunID), s.ref(st.RunID), s.ref(st.RunID))
		}
		return cmdutil.Silent(cmdutil.ExitFailed)
	}
}

func runPlan(cmd *cobra.Command, f *cmdutil.Factory, opts *PlanOptions) error {
	if strings.TrimSpace(opts.Goal) == "" {
		return cmdutil.UsageError(errors.New("the goal is empty: say what to plan"))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	if err := s.ensureVolumes(); err != nil {
		return err
	}
	p, _, err := makePlan(cmd.Context(), s, s.llm(), opts.Goal, s.sink(false), func() {})
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	_, err = fmt.Fprint(f.IO.Out, renderPlan(p))
	return err
}

// needKey refuses a run without an API key before anything is checked,
// made or started: every task needs the model.
func (s *session) needKey() error {
	if s.cfg.APIKey == "" {
		return cmdutil.UsageError(llm.ErrNoAPIKey)
	}
	return nil
}

func runResume(cmd *cobra.Command, f *cmdutil.Factory, runID string) error {
	ctx := cmd.Context()
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	if err := s.needKey(); err != nil {
		return err
	}
	if err := s.ensureVolumes(); err != nil {
		return err
	}
	retryFailed, _ := cmd.Flags().GetBool("retry-failed")
	st, err := s.resumableState(runID, retryFailed)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	lock, err := runlock.Acquire(s.layout.Run(st.RunID))
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
	}
	defer lock.Release()
	// Read again under the lock: a holder that just ended has moved it on.
	if st, err = runrecord.LoadState(s.layout, st.RunID, false); err != nil {
		return cmdutil.UsageError(err)
	}
	pending, err := s.pendingReview(st.RunID)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if retryFailed {
		ids, err := st.RetryFailed()
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
		}
		if len(ids) == 0 {
			return cmdutil.UsageError(fmt.Errorf("run %s has no failed task to retry", st.RunID))
		}
		if err := st.Save(s.layout, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Err, "retrying the failed tasks of %s: %s\n", st.RunID, strings.Join(ids, ", "))
	}
	if st.Status.Finished() && len(pending) == 0 {
		hint := fmt.Sprintf("review comments (`planagent comment %s TASK FILE:LINE TEXT`) would become follow-up tasks", st.RunID)
		if st.Status != runrecord.RunCompleted {
			hint = fmt.Sprintf("`planagent resume %s --retry-failed` tries its failed tasks again", st.RunID)
		}
		return cmdutil.UsageError(fmt.Errorf("run %s is already %s; nothing to resume (%s)", st.RunID, st.Status, hint))
	}
	if err := s.resumeWith(cmd, st.Settings); err != nil {
		return err
	}
	model := s.cfg.Model
	if st.Settings != nil && st.Settings.Model != "" {
		model = st.Settings.Model
	}
	if s.runBudget, err = s.budget(model); err != nil {
		return err
	}
	if err := s.checkServer(ctx); err != nil {
		return err
	}
	jsonOut, _ := cmd.Flags().GetBool("json")
	if withUI, _ := cmd.Flags().GetBool("ui"); withUI {
		addr, _ := cmd.Flags().GetString("ui-addr")
		ui, err := s.listenUI(addr)
		if err != nil {
			return err
		}
		defer s.startUI(ctx, ui, st.RunID)()
	}
	rt, err := s.runtime(ctx, st.RunID, s.logs)
	if err != nil {
		return err
	}
	s.announce(f.IO.Err)
	if s.repo, err = s.resumeCheckpoints(ctx, st, f.IO.Err); err != nil {
		return err
	}
	if len(pending) > 0 {
		if err := s.addFollowUps(ctx, st, s.repo, pending, f.IO.Err); err != nil {
			return cmdutil.UsageError(fmt.Errorf("run %s: the review's follow-up tasks: %w", st.RunID, err))
		}
	}
	notifier := notify.New(s.cfg.Notify, s.logger)
	defer notifier.Wait()
	sink := notify.Sink(ctx, s.sink(jsonOut), notifier, st.Goal)
	ctx, span := traceRun(ctx, st.RunID, st.TraceParent)
	defer span.End()
	sink.Emit(events.Event{Type: events.Log, RunID: st.RunID, Text: "resuming run " + st.RunID})
	return drive(ctx, s, st, rt, s.llm(), sink, jsonOut)
}

// startUI serves the web view of the run on ln in the background (nothing
// when ln is nil); the returned function stops it and waits.
func (s *session) startUI(ctx context.Context, ln net.Listener, runID string) (stop func()) {
	if ln == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	token := webui.NewToken()
	go func() {
		defer close(done)
		if err := s.serveUI(ctx, ln, token); err != nil {
			s.logger.Warn("web view", "err", err)
		}
	}()
	fmt.Fprintf(s.f.IO.Err, "web view: %s/?token=%s#%s\n", webui.URL(ln), token, runID)
	return func() {
		cancel()
		<-done
	}
}

// runEnd is the run_end event: the outcome and the totals of the summary.
// Its usage is every token of the run (agents, planner and decisions).
func runEnd(st *runrecord.State, view *runview.Run, summaryFile string) events.Event {
	counts := map[taskgraph.Status]int{}
	var agent events.Usage
	var agentTime time.Duration
	for _, t := range st.Tasks {
		counts[t.Status]++
		if in := st.Info[t.ID]; in != nil {
			agent.Prompt += in.Tokens.Prompt
			agent.Completion += in.Tokens.Completion
			agentTime += in.Duration
		}
	}
	return events.Event{Type: events.RunEnd, RunID: st.RunID, Status: string(st.Status),
		Usage: &events.Usage{Prompt: agent.Prompt + st.Usage.Prompt, Completion: agent.Completion + st.Usage.Completion},
		Data: map[string]any{"tasks": len(st.Tasks), "completed": counts[taskgraph.Completed],
			"failed": counts[taskgraph.Failed], "skipped": counts[taskgraph.Skipped],
			"pending":        counts[taskgraph.Pending] + counts[taskgraph.InProgress],
			"agent_tokens":   agent,
			"planner_tokens": events.Usage{Prompt: st.Usage.Prompt, Completion: st.Usage.Completion},
			"agent_ms":       agentTime.Milliseconds(),
			"wall_ms":        st.Updated.Sub(st.Created).Milliseconds(),
			"summary_file":   summaryFile,
			"elapsed_ms":     st.Elapsed.Milliseconds(),
			"paused":         st.Paused,
			"stop_reason":    st.Stop,
			"cost_usd":       view.CostUSD, // null without a price for the model
			"per_task":       perTask(view)}}
}

// perTask is run_end's line per task: status, attempts, tokens, cost, time.
func perTask(view *runview.Run) []map[string]any {
	out := make([]map[string]any, 0, len(view.Tasks))
	for _, t := range view.Tasks {
		line := map[string]any{"id": t.ID, "status": t.Status, "attempts": t.Attempts,
			"tokens": t.Tokens, "cost_usd": t.CostUSD, "duration_ms": t.DurationMS, "elapsed_ms": t.ElapsedMS}
		if len(t.Subagents) > 0 {
			line["subagents"] = t.Subagents
		}
		out = append(out, line)
	}
	return out
}

// traceRun starts this process's invoke_agent span of the run: planning,
// decisions and every task attempt are under it. The run's first process
// starts the trace (parent "") and keeps its span's traceparent in the
// run's state; every resume starts its span as a child of that span, so a
// paused or interrupted run and all its resumes are one trace. A child, not
// a second root with the stored trace id: the SDK gives a root a fresh
// trace id, and viewers such as Jaeger draw a trace as a tree from one
// root, so each resume shows as a later branch of the run rather than as a
// second top-level span. Links are not needed: the parent already says it.
func traceRun(ctx context.Context, runID, parent string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{telemetry.OperationName.String("invoke_agent"),
		telemetry.AgentName.String("planagent"), telemetry.RunID.String(runID)}
	if parent != "" {
		ctx = telemetry.WithTraceParent(ctx, parent)
		attrs = append(attrs, telemetry.Resumed.Bool(true))
	}
	return telemetry.Start(ctx, "invoke_agent planagent", attrs...)
}
