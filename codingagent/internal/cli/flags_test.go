package cli

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/config"
)

// codingagent's setting flags are the config table's too (the persistent
// ones come from cmdutil.AddConfigFlags, shared with planagent).
func TestSettingFlagsAreTheConfigTables(t *testing.T) {
	table := pflag.NewFlagSet("table", pflag.ContinueOnError)
	for _, key := range config.Keys() {
		_ = config.AddFlags(table, key) // the keys without a flag (prices, …) are refused
	}
	f, _, _ := testFactory(nil)
	seen := 0
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(fl *pflag.Flag) {
			if want := table.Lookup(fl.Name); want != nil {
				seen++
				if fl.Usage != want.Usage || fl.Value.Type() != want.Value.Type() {
					t.Errorf("%s --%s (%s) is not the table's:\n got %q\nwant %q (%s)", cmd.CommandPath(), fl.Name,
						fl.Value.Type(), fl.Usage, want.Usage, want.Value.Type())
				}
			}
		}
		cmd.LocalNonPersistentFlags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(NewCmdRoot(f))
	if seen < 7 { // model, base-url, api, reasoning-effort, thinking-budget, volumes, workspace
		t.Errorf("%d setting flags found, want at least 7", seen)
	}
}
