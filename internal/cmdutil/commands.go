package cmdutil

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X .../cmdutil.version=v1.2.3".
var version = ""

// Version is the program version: the linker-set one, else the module's.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// NewCmdVersion prints the program's version.
func NewCmdVersion(f *Factory, program string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "%s %s\n", program, Version())
			return err
		},
	}
}

// NewCmdConfig prints the effective settings and where each came from.
func NewCmdConfig(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and the source of each value",
		Long: `Print every setting with its effective value and where it came from
(flag, environment variable, config file with line, or default). The API key
is masked. Precedence: flags > environment > config file > defaults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.Config(cmd)
			if err != nil {
				return err
			}
			return l.Print(f.IO.Out)
		},
	}
}
