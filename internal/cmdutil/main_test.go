package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Bad usage exits 2, whether cobra or a command says so; any other failure
// of a command exits 1.
func TestMainExitCodes(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "prog"}
		SetupRoot(root)
		root.PersistentFlags().Int("parallel", 1, "")
		root.AddCommand(
			&cobra.Command{Use: "fail", Args: cobra.NoArgs,
				RunE: func(*cobra.Command, []string) error { return errors.New("write the report: disk full") }},
			&cobra.Command{Use: "badconfig",
				RunE: func(*cobra.Command, []string) error { return UsageError(errors.New("parallel must be > 0")) }},
			&cobra.Command{Use: "ok", Run: func(*cobra.Command, []string) {}},
		)
		for _, name := range []string{"run", "resume"} {
			sub := &cobra.Command{Use: name, RunE: func(*cobra.Command, []string) error { return nil }}
			sub.Flags().Int("max-retries", 1, "")
			root.AddCommand(sub)
		}
		return root
	}
	tests := []struct {
		args    []string
		want    int
		wantErr string
	}{
		{[]string{"ok"}, ExitOK, ""},
		{[]string{"fail"}, ExitFailed, "prog: write the report: disk full"},
		{[]string{"badconfig"}, ExitUsage, "parallel must be > 0"},
		{[]string{"fail", "extra"}, ExitUsage, `unknown command "extra"`},
		{[]string{"ok", "--nope"}, ExitUsage, "unknown flag: --nope (see prog ok --help)"},
		{[]string{"ok", "--paralel", "2"}, ExitUsage, "unknown flag: --paralel: did you mean --parallel?"},
		{[]string{"nosuch"}, ExitUsage, `unknown command "nosuch"`},
		// A subcommand's flag before any subcommand: its owners are named.
		{[]string{"--max-retrys", "2"}, ExitUsage, "unknown flag: --max-retrys: did you mean --max-retries? It is a flag of prog resume and prog run: put it after the command"},
		{[]string{"--max-retries", "2"}, ExitUsage, "unknown flag: --max-retries: --max-retries is a flag of prog resume and prog run: put it after the command"},
		{[]string{"--zzz"}, ExitUsage, "unknown flag: --zzz (see prog --help)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			f := &Factory{IO: IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}}
			if got := Main(f, newRoot(), tt.args); got != tt.want {
				t.Errorf("exit %d, want %d; stderr %q", got, tt.want, errb.String())
			}
			if !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tt.wantErr)
			}
		})
	}
}

// --version is the version in both programs; -v is never the version (it
// is planagent's --verbose), and the error names --version.
func TestVersionIsTheLongFlagOnly(t *testing.T) {
	run := func(verbose bool, args ...string) (int, string, string) {
		root := &cobra.Command{Use: "prog", RunE: func(*cobra.Command, []string) error { return nil }}
		SetupRoot(root)
		if verbose {
			root.PersistentFlags().BoolP("verbose", "v", false, "")
		}
		var out, errb bytes.Buffer
		code := Main(&Factory{IO: IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}}, root, args)
		return code, out.String(), errb.String()
	}
	if code, out, _ := run(false, "--version"); code != ExitOK || !strings.HasPrefix(out, "prog ") {
		t.Errorf("--version: exit %d, stdout %q", code, out)
	}
	if code, out, errb := run(false, "-v"); code != ExitUsage || out != "" || !strings.Contains(errb, "the version is --version") {
		t.Errorf("-v without a verbose flag: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if code, out, errb := run(true, "-v"); code != ExitOK || out != "" {
		t.Errorf("-v as --verbose: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

// Main installs the program's traces (Factory.Traces) under the root's
// name before the command runs, and flushes them after it.
func TestMainSetsUpAndFlushesTraces(t *testing.T) {
	var calls []string
	root := &cobra.Command{Use: "prog", RunE: func(*cobra.Command, []string) error {
		calls = append(calls, "run")
		return nil
	}}
	var errb bytes.Buffer
	f := &Factory{IO: IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb}}
	f.Traces = func(_ context.Context, service string) (func(context.Context) error, error) {
		calls = append(calls, "setup "+service)
		return func(context.Context) error {
			calls = append(calls, "shutdown")
			return nil
		}, nil
	}
	if code := Main(f, root, nil); code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if got := strings.Join(calls, ", "); got != "setup prog, run, shutdown" {
		t.Errorf("calls: %s", got)
	}
	// A setup that fails leaves the command to run without traces.
	f.Traces = func(context.Context, string) (func(context.Context) error, error) {
		return nil, errors.New("bad endpoint")
	}
	if code := Main(f, root, nil); code != ExitOK || !strings.Contains(errb.String(), "prog: traces: bad endpoint (going on without them)") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
