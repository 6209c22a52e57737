package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
)

// PlanOptions are the flags of `planagent plan`.
type PlanOptions struct {
	Goal string
	JSON bool
}

// NewCmdPlan builds `planagent plan`.
func NewCmdPlan(f *cmdutil.Factory, runF func(*cobra.Command, *PlanOptions) error) *cobra.Command {
	opts := &PlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan GOAL",
		Short: "Plan GOAL into a validated task graph and print it, without running it",
		Long: `Ask the model for a plan of GOAL: it may look at the workspace with read-only
tools (read_file, list_dir, glob, grep) and must call create_plan. The plan is
validated (unique ids, known dependencies, no cycles); problems are sent back
to the model to fix, a bounded number of times.`,
		Args: cmdutil.GoalArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Goal = args[0]
			if runF != nil {
				return runF(cmd, opts)
			}
			return runPlan(cmd, f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the plan as JSON")
	return cmd
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
		return jsonout.Write(f.IO.Out, p)
	}
	_, err = fmt.Fprint(f.IO.Out, renderPlan(p))
	return err
}
