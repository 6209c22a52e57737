package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/planagent/internal/judge"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// drive runs the orchestrator and reports the outcome; shared by run and resume.
func drive(ctx context.Context, s *session, st *runrecord.State, rt orchestrator.Runtime, client *llmclient.Client, sink events.Sink, jsonOut bool) error {
	now, driven := watchInterrupts(ctx, s.f.IO.Err)
	o := orchestrator.New(orchestrator.Options{
		Layout: s.layout, Runtime: stopNowRuntime{Runtime: rt, now: now}, Events: sink, Logger: s.logger,
		Decider:  &orchestrator.LLMDecider{Client: client, Model: s.cfg.Model},
		Parallel: s.cfg.Parallel, MaxRetries: s.cfg.MaxRetries, TaskTimeout: s.cfg.TaskTimeout,
		SetupCommand: s.cfg.SetupCommand,
		Attempts:     s.cfg.Attempts, Policy: s.cfg.AttemptPolicy, FirstPassWins: s.cfg.FirstPassWins, Judge: s.cfg.Judge,
		Reviewer: reviewer(s.cfg.Judge, client, s.cfg.Model),
		Budget:   s.runBudget, Meter: s.meterOption(), Egress: &s.refusals, Repo: repoOption(s.repo), Failpoint: failpoint(), Watch: s.watch,
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

// reviewer is the LLM judge of `judge: llm` (nil for a judge command, or none).
func reviewer(j string, client *llmclient.Client, model string) orchestrator.Reviewer {
	if j != "llm" || client == nil {
		return nil
	}
	return &judge.LLM{Client: client, Model: model}
}
