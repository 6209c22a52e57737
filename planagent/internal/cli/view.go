package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// RunsOptions are the flags of `planagent runs`.
type RunsOptions struct {
	JSON bool
}

// NewCmdRuns builds `planagent runs`.
func NewCmdRuns(f *cmdutil.Factory, runF func(*cobra.Command, *RunsOptions) error) *cobra.Command {
	opts := &RunsOptions{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List every run under the volumes, newest first",
		Long: `List every run under <volumes>/runs: id, goal, status, start, tokens and cost
(when the config has prices for the run's model). --json prints a JSON array.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRuns(cmd, f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the runs as a JSON array")
	return cmd
}

// GraphOptions are the flags of `planagent graph`.
type GraphOptions struct {
	Run    string
	Format string
}

// NewCmdGraph builds `planagent graph`.
func NewCmdGraph(f *cmdutil.Factory, runF func(*cobra.Command, *GraphOptions) error) *cobra.Command {
	opts := &GraphOptions{}
	cmd := &cobra.Command{
		Use:   "graph [RUN]",
		Short: "Print a run's task graph with each task's status (default: the latest run)",
		Long: `Print the task graph of RUN, each task with its status: as a mermaid flowchart
coloured by status (paste it into any markdown that renders mermaid), in
graphviz's dot language (render with dot -Tsvg), or as JSON nodes and edges.`,
		Example: `  planagent graph --format dot | dot -Tsvg > run.svg
  planagent graph run-20261121-084500-1a2b --format json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runGraph(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "mermaid", "mermaid, dot or json")
	return cmd
}

// viewOptions price runs with the configured model and prices.
func (s *session) viewOptions() runview.Options {
	prices := runview.Prices{}
	for m, p := range s.cfg.Prices {
		prices[m] = runview.Price{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite}
	}
	return runview.Options{Model: s.cfg.Model, Prices: prices}
}

// loadView reads a run's state (the latest run for "") and builds its view.
func (s *session) loadView(runID string) (*runrecord.State, *runview.Run, error) {
	st, err := runrecord.LoadState(s.layout, runID, false)
	if err != nil {
		return nil, nil, cmdutil.UsageError(err)
	}
	return st, runview.Build(st, s.viewOptions()), nil
}

func runStatus(cmd *cobra.Command, f *cmdutil.Factory, opts *StatusOptions) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, v, err := s.loadView(opts.Run)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, v)
	}
	g, err := taskgraph.New(st.Tasks)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
	}
	fmt.Fprintf(f.IO.Out, "Run %s (%s), updated %s\nGoal: %s\n", st.RunID, st.Status,
		st.Updated.Local().Format(time.DateTime), st.Goal)
	if st.Paused != "" {
		fmt.Fprintf(f.IO.Out, "Paused: %s (planagent resume %s %s continues)\n", st.Paused, st.RunID, budgetFlag(st.Stop))
	}
	fmt.Fprintf(f.IO.Out, "\n%s", g.Summary())
	return nil
}

func runRuns(cmd *cobra.Command, f *cmdutil.Factory, opts *RunsOptions) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	rows, err := runview.List(s.layout, s.viewOptions())
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(f.IO.Err, "no runs under %s (start one with `planagent run GOAL`)\n", s.layout.Runs())
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tTASKS\tTOKENS\tCOST\tGOAL")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tunreadable\t\t\t\t\t%s\n", r.ID, r.Error)
			continue
		}
		cost := "-"
		if r.CostUSD != nil {
			cost = fmt.Sprintf("$%.4f", *r.CostUSD)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Created.Local().Format(time.DateTime),
			r.Counts["completed"], r.Tasks, r.Tokens.Total, cost, shortGoal(r.Goal))
	}
	return tw.Flush()
}

func runGraph(cmd *cobra.Command, f *cmdutil.Factory, opts *GraphOptions) error {
	format := strings.ToLower(opts.Format)
	if format != "mermaid" && format != "dot" && format != "json" {
		return cmdutil.UsageError(fmt.Errorf("--format %q is not known: use mermaid, dot or json", opts.Format))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	_, v, err := s.loadView(opts.Run)
	if err != nil {
		return err
	}
	switch format {
	case "dot":
		_, err = io.WriteString(f.IO.Out, runview.Dot(v))
	case "json":
		err = cmdutil.WriteJSON(f.IO.Out, runview.GraphOf(v))
	default:
		_, err = io.WriteString(f.IO.Out, runview.Mermaid(v))
	}
	return err
}

func shortGoal(g string) string {
	g = strings.Join(strings.Fields(g), " ")
	if r := []rune(g); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return g
}

// addBudgetFlags adds --budget-tokens, --budget-time and --budget-usd (the
// config keys budget_*), for run and resume.
func addBudgetFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int("budget-tokens", 0, "pause the run once its tokens (agents, planner, decisions) reach N: no new task starts; exit 3 (config budget_tokens)")
	fl.Duration("budget-time", 0, "pause the run once it has run this long, e.g. 30m; exit 3 (config budget_time)")
	fl.Float64("budget-usd", 0, "pause the run once its cost reaches X USD; needs prices for the model in the config; exit 3 (config budget_usd)")
}

// budgetFlag is the flag that raises the budget a paused run reached, with
// a placeholder for its new value: a cost pause is not lifted by tokens.
func budgetFlag(stop *runrecord.Stop) string {
	switch {
	case stop != nil && stop.Reason == runrecord.StopBudgetUSD:
		return "--budget-usd USD"
	case stop != nil && stop.Reason == runrecord.StopBudgetTime:
		return "--budget-time DURATION"
	default:
		return "--budget-tokens N"
	}
}
