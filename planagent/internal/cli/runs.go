package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/planagent/internal/runview"
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
		return jsonout.Write(f.IO.Out, rows)
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
