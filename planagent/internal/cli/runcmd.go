package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// makePlan runs the planner over the workspace.
func makePlan(ctx context.Context, s *session, client *llm.Client, goal string, sink events.Sink) (*plan.Plan, llm.Usage, error) {
	ws, err := tools.NewWorkspace(s.layout.Workspace())
	if err != nil {
		return nil, llm.Usage{}, cmdutil.UsageError(fmt.Errorf("workspace: %w", err))
	}
	set := tools.ReadOnly(ws)
	var repoMap string
	if s.cfg.RepoMapTokens > 0 {
		set = set.With(tools.NewRepoMap(ws, s.layout.RepoMapCache()))
		var err error
		repoMap, err = repomap.Section(ctx, repomap.Options{Root: ws.Root(), CacheDir: s.layout.RepoMapCache(),
			Tokens: s.cfg.RepoMapTokens, Boost: []string{goal}})
		if err != nil {
			s.logger.Warn("repo map unavailable", "err", err)
		}
	}
	planner := plan.NewPlanner(client, set, plan.Options{
		Events: sink, WorkspaceView: workspaceView(ws.Root()), RepoMap: repoMap,
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
	if strings.TrimSpace(opts.Goal) == "" {
		return cmdutil.UsageError(errors.New("the goal is empty: say what to do, e.g. planagent run \"add a health check endpoint\""))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	sink := s.sink(opts.JSON)
	runID := orchestrator.NewRunID(time.Now())
	// The runtime is checked before planning so a missing engine or binary
	// costs no LLM call.
	rt, err := s.runtime(ctx, runID, f.IO.Err)
	if err != nil {
		return err
	}
	client := s.llm()
	// The run announces the accepted plan itself, with its run id and the
	// plan; the planner's own plan_created would be a second one.
	plannerSink := events.Func(func(e events.Event) {
		if e.Type != events.PlanCreated {
			sink.Emit(e)
		}
	})
	p, usage, err := makePlan(ctx, s, client, opts.Goal, plannerSink)
	if err != nil {
		return err
	}
	if !opts.JSON {
		fmt.Fprint(f.IO.Err, renderPlan(p))
	}
	if !opts.Yes && f.IO.IsTerminal != nil && f.IO.IsTerminal() {
		fmt.Fprint(f.IO.Err, "\nProceed? [Y/n] ")
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "" && a != "y" && a != "yes" {
			fmt.Fprintln(f.IO.Err, "Not run.")
			return cmdutil.Silent(cmdutil.ExitOK)
		}
	}
	st, err := orchestrator.NewState(runID, opts.Goal, p, usage, time.Now())
	if err != nil {
		return cmdutil.UsageError(err)
	}
	st.Settings = s.settings()
	if err := st.Save(s.layout, time.Now()); err != nil {
		return err
	}
	sink.Emit(events.Event{Type: events.PlanCreated, RunID: runID, Text: p.Title,
		Data: map[string]any{"tasks": len(p.Tasks), "plan": p}})
	return drive(ctx, s, st, rt, client, sink, opts.JSON)
}

// drive runs the orchestrator and reports the outcome; shared by run and resume.
func drive(ctx context.Context, s *session, st *orchestrator.State, rt orchestrator.Runtime, client *llm.Client, sink events.Sink, jsonOut bool) error {
	o := orchestrator.New(orchestrator.Options{
		Layout: s.layout, Runtime: rt, Events: sink, Logger: s.logger,
		Decider:  &orchestrator.LLMDecider{Client: client, Model: s.cfg.Model},
		Parallel: s.cfg.Parallel, MaxRetries: s.cfg.MaxRetries, TaskTimeout: s.cfg.TaskTimeout,
	})
	err := o.Drive(ctx, st)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if werr := orchestrator.WriteSummary(s.layout, st); werr != nil {
		s.logger.Warn("write summary", "err", werr)
	}
	sink.Emit(runEnd(st, s.layout.Summary()))
	if !jsonOut {
		fmt.Fprint(s.f.IO.Out, "\n"+orchestrator.Summary(st))
	}
	switch {
	case err != nil || st.Status == orchestrator.RunInterrupted:
		fmt.Fprintf(s.f.IO.Err, "interrupted: continue with `planagent resume %s`\n", st.RunID)
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case st.Status == orchestrator.RunCompleted:
		return nil
	default:
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
	p, _, err := makePlan(cmd.Context(), s, s.llm(), opts.Goal, s.sink(false))
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	_, err = fmt.Fprint(f.IO.Out, renderPlan(p))
	return err
}

func runStatus(cmd *cobra.Command, f *cmdutil.Factory, runID string) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, err := orchestrator.LoadState(s.layout, runID, false)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	g, err := taskgraph.New(st.Tasks)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
	}
	fmt.Fprintf(f.IO.Out, "Run %s (%s), updated %s\nGoal: %s\n\n%s", st.RunID, st.Status,
		st.Updated.Local().Format(time.DateTime), st.Goal, g.Summary())
	return nil
}

func runResume(cmd *cobra.Command, f *cmdutil.Factory, runID string) error {
	ctx := cmd.Context()
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, err := orchestrator.LoadState(s.layout, runID, true)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if st.Status.Finished() {
		return cmdutil.UsageError(fmt.Errorf("run %s is already %s; nothing to resume", st.RunID, st.Status))
	}
	if err := s.resumeWith(cmd, st.Settings); err != nil {
		return err
	}
	jsonOut, _ := cmd.Flags().GetBool("json")
	rt, err := s.runtime(ctx, st.RunID, f.IO.Err)
	if err != nil {
		return err
	}
	sink := s.sink(jsonOut)
	sink.Emit(events.Event{Type: events.Log, RunID: st.RunID, Text: "resuming run " + st.RunID})
	return drive(ctx, s, st, rt, s.llm(), sink, jsonOut)
}

// runEnd is the run_end event: the outcome and the totals of the summary.
// Its usage is every token of the run (agents, planner and decisions).
func runEnd(st *orchestrator.State, summaryFile string) events.Event {
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
			"summary_file":   summaryFile}}
}
