package cli

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/planagent/internal/notify"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// RunOptions are the flags of `planagent run` that are its own; --runtime,
// --parallel and --max-retries are settings, read with the rest of the
// configuration (config.Load: flag > env > file > default).
type RunOptions struct {
	Goal     string
	PlanFile string // --plan: run this task graph instead of asking a planner
	Yes      bool
	JSON     bool
	UI       bool
	UIAddr   string
	// Check runs the start-of-run checks (engine, image, the model from
	// inside a container, the boundary probe), prints the boundary and
	// stops before planning.
	Check bool
}

// NewCmdRun builds `planagent run`. runF replaces the run function in tests.
func NewCmdRun(f *cmdutil.Factory, runF func(*cobra.Command, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run GOAL | run --plan FILE [GOAL]",
		Short: "Plan GOAL (or read a plan file) and carry out every task with the coding agent",
		Long: `Plan GOAL into a task graph (the model gets read-only tools over the workspace
and must call create_plan), show the plan and ask to proceed (unless --yes or
no terminal), then dispatch the tasks to a codingagent through the volumes,
wait for their reports, decide what to do after failures and print a summary
(also written to <volumes>/reports/summary.md).

--plan FILE runs a checked-in task graph instead: YAML or JSON in the
create_plan schema (title, overview, tasks: [{id, title, description,
dependencies, acceptance}]), validated the same way, up to 10000 tasks; no
planner call is made. GOAL defaults to the plan's title. A bad file exits 2
with each problem as FILE:LINE: problem. ` + "`planagent plan GOAL --json > plan.json`" + `
writes a file it accepts.`,
		Example: `  planagent run "add a /healthz endpoint with a test" --runtime local --yes
  planagent run "fix the failing tests" --workspace ~/src/myapp --parallel 2 --json
  planagent run --plan ci/plan.yaml --runtime local --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.PlanFile != "" || opts.Check {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			return cmdutil.GoalArgOr("--plan FILE")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Goal = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before running the plan")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	fl.StringVar(&opts.PlanFile, "plan", "", "run the plan in `FILE` (YAML or JSON, create_plan schema) without calling the planner")
	fl.BoolVar(&opts.Check, "check", false, "run the start-of-run checks (engine, image, model, the attempts' boundary: docs/egress.md), print the boundary and exit without planning")
	fl.BoolVar(&opts.UI, "ui", false, "serve the live web view of the run (see planagent ui) while it runs")
	fl.StringVar(&opts.UIAddr, "ui-addr", webui.DefaultAddr, "host:port of the web view of --ui")
	addSettingFlags(cmd, false)
	return cmd
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
	if opts.Check && strings.TrimSpace(opts.Goal) == "" {
		opts.Goal = "check"
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
	s.events = sink
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
	s.boundary = boundaryOf(rt)
	if opts.Check {
		// Nothing was started: the probes' containers are gone already.
		if c, ok := rt.(interface{ Close() error }); ok {
			_ = c.Close()
		}
		_, err := fmt.Fprintf(f.IO.Out, "boundary: %s\n", s.boundary)
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
		fmt.Fprint(f.IO.Err, renderPlan(p)+attemptsLine(p, s.cfg)+budgetLine(s.cfg))
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
	st.Boundary = s.boundary
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
		Data: map[string]any{"tasks": len(p.Tasks), "plan": p, "boundary": s.boundary}})
	defer s.startUI(ctx, ui, runID)()
	stopPrewarm(true)
	return drive(ctx, s, st, rt, client, sink, opts.JSON)
}
