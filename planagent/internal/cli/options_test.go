package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// Each command parses its arguments and flags into its options and hands
// them to its run function, here a runF that records them (the GitHub
// CLI's pattern): what a flag means is tested without running anything.
func TestCommandsParseIntoOptions(t *testing.T) {
	f, _, _ := testFactory(nil)
	var got any
	build := map[string]func() *cobra.Command{
		"run": func() *cobra.Command {
			return NewCmdRun(f, func(_ *cobra.Command, o *RunOptions) error { got = *o; return nil })
		},
		"plan": func() *cobra.Command {
			return NewCmdPlan(f, func(_ *cobra.Command, o *PlanOptions) error { got = *o; return nil })
		},
		"status": func() *cobra.Command {
			return NewCmdStatus(f, func(_ *cobra.Command, o *StatusOptions) error { got = *o; return nil })
		},
		"resume": func() *cobra.Command {
			return NewCmdResume(f, func(_ *cobra.Command, run string) error { got = run; return nil })
		},
		"runs": func() *cobra.Command {
			return NewCmdRuns(f, func(_ *cobra.Command, o *RunsOptions) error { got = *o; return nil })
		},
		"graph": func() *cobra.Command {
			return NewCmdGraph(f, func(_ *cobra.Command, o *GraphOptions) error { got = *o; return nil })
		},
		"ui": func() *cobra.Command {
			return NewCmdUI(f, func(_ *cobra.Command, o *UIOptions) error { got = *o; return nil })
		},
		"diff": func() *cobra.Command {
			return NewCmdDiff(f, func(_ *cobra.Command, o *DiffOptions) error { got = *o; return nil })
		},
		"rollback": func() *cobra.Command {
			return NewCmdRollback(f, func(_ *cobra.Command, o *RollbackOptions) error { got = *o; return nil })
		},
	}
	tests := []struct {
		cmd     string
		args    []string
		want    any
		wantErr string
	}{
		{cmd: "run", args: []string{"add a test", "--runtime", "local", "--parallel", "3", "--max-retries", "2", "-y", "--json"},
			want: RunOptions{Goal: "add a test", Yes: true, JSON: true, UIAddr: webui.DefaultAddr}},
		{cmd: "run", args: []string{"--plan", "ci/plan.yaml", "--ui", "--ui-addr", "127.0.0.1:9999"},
			want: RunOptions{PlanFile: "ci/plan.yaml", UI: true, UIAddr: "127.0.0.1:9999"}},
		{cmd: "run", args: []string{}, wantErr: "GOAL"},
		{cmd: "run", args: []string{"--plan", "p.yaml", "goal", "extra"}, wantErr: "accepts at most 1 arg"},
		{cmd: "run", args: []string{"g", "--parallel", "many"}, wantErr: `invalid argument "many"`},
		{cmd: "plan", args: []string{"make it faster", "--json"}, want: PlanOptions{Goal: "make it faster", JSON: true}},
		{cmd: "plan", args: []string{}, wantErr: "GOAL"},
		{cmd: "status", args: []string{}, want: StatusOptions{}},
		{cmd: "status", args: []string{"run-1", "--json"}, want: StatusOptions{Run: "run-1", JSON: true}},
		{cmd: "resume", args: []string{"run-2"}, want: "run-2"},
		{cmd: "resume", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
		{cmd: "runs", args: []string{"--json"}, want: RunsOptions{JSON: true}},
		{cmd: "runs", args: []string{"x"}, wantErr: "unknown command"},
		{cmd: "graph", args: []string{"run-3", "--format", "dot"}, want: GraphOptions{Run: "run-3", Format: "dot"}},
		{cmd: "graph", args: []string{}, want: GraphOptions{Format: "mermaid"}},
		{cmd: "ui", args: []string{"--addr", ":0"}, want: UIOptions{Addr: ":0"}},
		{cmd: "diff", args: []string{}, want: DiffOptions{}},
		{cmd: "diff", args: []string{"add-tests"}, want: DiffOptions{Task: "add-tests"}},
		{cmd: "diff", args: []string{"run-20261121-084500-1a2b"}, want: DiffOptions{Run: "run-20261121-084500-1a2b"}},
		{cmd: "diff", args: []string{"run-1", "add-tests"}, want: DiffOptions{Run: "run-1", Task: "add-tests"}},
		{cmd: "diff", args: []string{"a", "b", "c"}, wantErr: "accepts at most 2 arg"},
		{cmd: "rollback", args: []string{"--to", "parser"}, want: RollbackOptions{To: "parser"}},
		{cmd: "rollback", args: []string{"run-4", "--start"}, want: RollbackOptions{Run: "run-4", Start: true}},
		{cmd: "rollback", args: []string{}, wantErr: "--to TASK or --start"},
		{cmd: "rollback", args: []string{"--to", "parser", "--start"}, wantErr: "--to TASK or --start"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			got = nil
			cmd := build[tt.cmd]()
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("the run function ran with %+v after a usage error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}
