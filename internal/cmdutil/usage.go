package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/config"
)

// SetupRoot gives a program's root command what a new user tries first:
// `--version`, and a suggestion for a mistyped flag.
func SetupRoot(root *cobra.Command) {
	root.Version = Version()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	// Declared here so cobra adds no -v: -v is --verbose where a program
	// has it, and means the same in both programs.
	root.Flags().Bool("version", false, "print "+root.Name()+"'s version")
	root.SetFlagErrorFunc(suggestFlag)
}

// GoalArg accepts exactly one GOAL argument. An unquoted goal arrives as
// several words; the error says to quote it rather than count arguments.
func GoalArg(cmd *cobra.Command, args []string) error { return GoalArgOr("")(cmd, args) }

// GoalArgOr is GoalArg whose missing-GOAL message names another way
// (e.g. "--plan FILE").
func GoalArgOr(alternative string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && alternative != "" {
			return fmt.Errorf("missing GOAL: say what to do, e.g. %s \"add a /healthz endpoint\", or use %s", cmd.CommandPath(), alternative)
		}
		return goalArg(cmd, args)
	}
}

func goalArg(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 1:
		return nil
	case len(args) == 0:
		return fmt.Errorf("missing GOAL: say what to do, e.g. %s \"add a /healthz endpoint\"", cmd.CommandPath())
	default:
		return fmt.Errorf("GOAL must be one argument: quote it, e.g. %s %q", cmd.CommandPath(), strings.Join(args, " "))
	}
}

// CompleteValues makes flag complete to values in shells (`completion`).
func CompleteValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// suggestFlag adds "did you mean --x?" to an unknown flag error.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		if strings.HasPrefix(msg, "unknown shorthand flag: 'v'") {
			return fmt.Errorf("%w: the version is --version (see %s --help)", err, cmd.CommandPath())
		}
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	}
	var names []string
	visit := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best := config.Nearest(name, names); best != "" {
		return fmt.Errorf("%w: did you mean --%s?", err, best)
	}
	// A subcommand's flag given before the subcommand (`planagent --paralel 2`).
	if best, owners := subcommandFlag(cmd, name); best != "" {
		where := fmt.Sprintf("a flag of %s: put it after the command", strings.Join(owners, " and "))
		if best == name {
			return fmt.Errorf("%w: --%s is %s", err, best, where)
		}
		return fmt.Errorf("%w: did you mean --%s? It is %s", err, best, where)
	}
	return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
}

// subcommandFlag is the flag of cmd's subcommands nearest to name, and the
// subcommands that have it.
func subcommandFlag(cmd *cobra.Command, name string) (string, []string) {
	owners := map[string][]string{} // each subcommand's nearest flag → subcommands
	var names []string
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		var flags []string
		sub.LocalFlags().VisitAll(func(f *pflag.Flag) { flags = append(flags, f.Name) })
		if n := config.Nearest(name, flags); n != "" {
			if owners[n] == nil {
				names = append(names, n)
			}
			owners[n] = append(owners[n], sub.CommandPath())
		}
	}
	best := config.Nearest(name, names)
	return best, owners[best]
}
