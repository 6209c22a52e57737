package cli

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/config"
)

// Every flag of a setting, on every command, is the config table's: its
// name, type and help are written once there (config.AddFlags), and
// resume's flags of the settings a run saved say that it keeps them.
func TestSettingFlagsAreTheConfigTables(t *testing.T) {
	table := pflag.NewFlagSet("table", pflag.ContinueOnError)
	kept := pflag.NewFlagSet("kept", pflag.ContinueOnError)
	for _, key := range config.Keys() {
		_ = config.AddFlags(table, key) // the keys without a flag (prices, …) are refused
		_ = config.AddFlagsKept(kept, "as the run was started", key)
	}
	f, _, _ := testFactory(nil)
	root := NewCmdRoot(f)
	seen := map[string]bool{}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(fl *pflag.Flag) {
			want := table.Lookup(fl.Name)
			if want == nil {
				return
			}
			seen[fl.Name] = true
			if fl.Value.Type() != want.Value.Type() {
				t.Errorf("%s --%s is a %s, the table's a %s", cmd.CommandPath(), fl.Name, fl.Value.Type(), want.Value.Type())
			}
			if fl.Usage != want.Usage && (cmd.Name() != "resume" || fl.Usage != kept.Lookup(fl.Name).Usage) {
				t.Errorf("%s --%s help is not the table's:\n got %q\nwant %q", cmd.CommandPath(), fl.Name, fl.Usage, want.Usage)
			}
		}
		cmd.LocalNonPersistentFlags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
	for _, name := range []string{"model", "base-url", "api", "reasoning-effort", "thinking-budget", "volumes", "workspace",
		"runtime", "image", "parallel", "max-retries", "budget-tokens", "budget-time", "budget-usd",
		"namespace", "kubeconfig", "context", "kube-secret", "include-ignored", "setup-command"} {
		if !seen[name] {
			t.Errorf("no command has --%s", name)
		}
	}
}
