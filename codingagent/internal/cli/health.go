package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/watch"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/volume"
)

const defaultHealthMaxAge = 15 * time.Second

// NewCmdHealth builds `codingagent health`, the container's HEALTHCHECK.
func NewCmdHealth(f *cmdutil.Factory) *cobra.Command {
	var maxAge time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 when a watcher's heartbeat on the volumes is fresh (the image's HEALTHCHECK)",
		Long: `Exit 0 when some watcher's heartbeat under <volumes>/reports/.watchers/ is
fresher than --max-age, else print why and exit 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHealth(cmd, f, maxAge) },
	}
	cmd.Flags().DurationVar(&maxAge, "max-age", 0, "heartbeat older than this is stale (default 15s)")
	return cmd
}

func runHealth(cmd *cobra.Command, f *cmdutil.Factory, maxAge time.Duration) error {
	if maxAge < 0 {
		return cmdutil.UsageError(fmt.Errorf("--max-age %s: must not be negative", maxAge))
	}
	if maxAge == 0 {
		maxAge = defaultHealthMaxAge
	}
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	layout, err := volume.New(l.VolumesDir, l.WorkspaceDir)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	now := time.Now()
	h, err := watch.Healthy(layout.Watchers(), now, maxAge)
	if err != nil {
		return cmdutil.Failed(err)
	}
	running := "nothing"
	if len(h.Running) > 0 {
		running = strings.Join(h.Running, ", ")
	}
	_, err = fmt.Fprintf(f.IO.Out, "healthy: watcher %s (pid %d on %s) beat %s ago, running %s\n",
		h.ID, h.PID, h.Host, now.Sub(h.Updated).Round(time.Millisecond), running)
	return err
}
