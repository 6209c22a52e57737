package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/planagent/internal/runview"
)

// GraphOptions are the flags of `planagent graph`.
type GraphOptions struct {
	Run    string
	Format string
}

// NewCmdGraph builds `planagent graph`.
func NewCmdGraph(f *cmdutil.Factory, runF func(*cobra.Command, *GraphOptions) error) *cobra.Command {
	opts := &GraphOptions{}
	cmd := &cobra.Command{
		Use:   "graph [RUN]",
		Short: "Print a run's task graph with each task's status (default: the latest run)",
		Long: `Print the task graph of RUN, each task with its status: as a mermaid flowchart
coloured by status (paste it into any markdown that renders mermaid), in
graphviz's dot language (render with dot -Tsvg), or as JSON nodes and edges.`,
		Example: `  planagent graph --format dot | dot -Tsvg > run.svg
  planagent graph run-20261121-084500-1a2b --format json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runGraph(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "mermaid", "mermaid, dot or json")
	return cmd
}

func runGraph(cmd *cobra.Command, f *cmdutil.Factory, opts *GraphOptions) error {
	format := strings.ToLower(opts.Format)
	if format != "mermaid" && format != "dot" && format != "json" {
		return cmdutil.UsageError(fmt.Errorf("--format %q is not known: use mermaid, dot or json", opts.Format))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	_, v, err := s.loadView(opts.Run)
	if err != nil {
		return err
	}
	switch format {
	case "dot":
		_, err = io.WriteString(f.IO.Out, runview.Dot(v))
	case "json":
		err = jsonout.Write(f.IO.Out, runview.GraphOf(v))
	default:
		_, err = io.WriteString(f.IO.Out, runview.Mermaid(v))
	}
	return err
}
