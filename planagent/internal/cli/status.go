package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// StatusOptions are the flags of `planagent status`.
type StatusOptions struct {
	Run  string
	JSON bool
}

// NewCmdStatus builds `planagent status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*cobra.Command, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Print the plan summary of a run (default: the latest)",
		Long: `Print the task graph of RUN in the plan-summary format:
[X] done (with its result), [>] in progress, [ ] pending, [!] failed, [-] skipped,
[~] interrupted (in progress when the run stopped: resume starts it again).

--json prints the run as one JSON object instead: its status, totals (tokens,
cost when the config has prices, time) and every task with its status,
attempts, tokens, cost, times, dependencies and timeline of attempts.`,
		Example: `  planagent status
  planagent status run-20261121-084500-1a2b --json | jq '.tasks[] | {id, status}'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runStatus(cmd, f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the run as JSON")
	return cmd
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
		return jsonout.Write(f.IO.Out, v)
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
	fmt.Fprintf(f.IO.Out, "\n%s", markInterrupted(g.Summary(), v))
	return nil
}

// markInterrupted turns the "[>]" line of each task the view calls
// interrupted into "[~]": the record keeps such a task in progress for
// resume, but in a stopped run no agent works on it.
func markInterrupted(summary string, v *runview.Run) string {
	lines := strings.SplitAfter(summary, "\n")
	for _, t := range v.Tasks {
		if t.Status != runview.StatusInterrupted {
			continue
		}
		for i, l := range lines {
			if rest, ok := strings.CutPrefix(l, "[>] "+t.ID+": "); ok {
				lines[i] = "[~] " + t.ID + ": " + strings.TrimSuffix(rest, "\n") + " (interrupted)\n"
				break
			}
		}
	}
	return strings.Join(lines, "")
}
