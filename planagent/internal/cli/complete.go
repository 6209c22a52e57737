package cli

import (
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// maxCompletedRuns bounds what a completion reads: each run's state is
// read for its description.
const maxCompletedRuns = 100

// completeRun completes a [RUN] argument with the runs under the volumes,
// newest first; withTask completes the TASK after it with the run's tasks,
// and loneTask the first argument with the latest run's tasks too (diff
// takes a lone TASK as one of the latest run).
func completeRun(f *cmdutil.Factory, withTask, loneTask bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s, err := newSession(f, cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		switch {
		case len(args) == 0:
			out = runCompletions(s.layout)
			if loneTask {
				out = append(out, taskCompletions(s.layout, "")...)
			}
		case len(args) == 1 && withTask:
			out = taskCompletions(s.layout, args[0])
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTaskFlag completes a flag naming a task (rollback --to) with the
// tasks of the run in the arguments, else of the latest run.
func completeTaskFlag(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s, err := newSession(f, cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		run := ""
		if len(args) > 0 {
			run = args[0]
		}
		return taskCompletions(s.layout, run), cobra.ShellCompDirectiveNoFileComp
	}
}

// runCompletions are the run ids under l, newest first, each described by
// its status and goal.
func runCompletions(l volume.Layout) []cobra.Completion {
	entries, _ := os.ReadDir(l.Runs())
	var ids []string
	for _, e := range entries {
		if e.IsDir() && protocol.ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	var out []cobra.Completion
	for _, id := range ids {
		if len(out) == maxCompletedRuns {
			break
		}
		st, err := runrecord.LoadState(l, id, false)
		if err != nil {
			continue // not a run (or unreadable): nothing to offer
		}
		out = append(out, cobra.CompletionWithDesc(id, string(st.Status)+": "+shortGoal(st.Goal)))
	}
	return out
}

// taskCompletions are the tasks of run ("" the latest), each described by
// its status and title.
func taskCompletions(l volume.Layout, run string) []cobra.Completion {
	st, err := runrecord.LoadState(l, run, false)
	if err != nil {
		return nil
	}
	out := make([]cobra.Completion, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		out = append(out, cobra.CompletionWithDesc(t.ID, string(t.Status)+": "+t.Title))
	}
	return out
}
