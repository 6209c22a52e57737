package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

// `resume --yes` (and -y) is accepted as `run --yes` is: the same line of a
// script starts and continues a run.
func TestResumeTakesYes(t *testing.T) {
	for _, args := range [][]string{{"--yes"}, {"-y", "run-1"}} {
		f, _, _ := testFactory(nil)
		ran := false
		cmd := NewCmdResume(f, func(*cobra.Command, string) error { ran = true; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil || !ran {
			t.Errorf("resume %v: %v (ran %v)", args, err, ran)
		}
	}
}
