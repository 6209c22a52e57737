package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/layers"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// containerContextDir is the runtime context dir inside the image.
const (
	containerContextDir   = "/app/volumes/context"
	containerWorkspaceDir = "/app/volumes/workspace"
)

type contextOptions struct {
	taskID     string
	runtimeDir string
	templates  string
	output     string
}

// NewCmdContext builds `codingagent context`.
func NewCmdContext(f *cmdutil.Factory) *cobra.Command {
	opts := &contextOptions{}
	cmd := &cobra.Command{
		Use:   "context --task-id ID",
		Short: "Combine the global, project and task context layers and print them",
		Long: `Combine the context layers the way the watcher does for a task: the global
layer from the templates, the project layer (the workspace's AGENTS.md, or
CLAUDE.md when there is no AGENTS.md, at most 32 KiB of it, then the runtime
dir's files, else the templates), the task layer from
<runtime-dir>/task/<task-id>/ (else the templates). Without --runtime-dir,
` + containerContextDir + ` is used when it exists (in the container) and
<volumes>/context otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runContext(cmd, f, opts) },
	}
	cmd.Flags().StringVar(&opts.taskID, "task-id", "", "task whose layer to use")
	cmd.Flags().StringVar(&opts.runtimeDir, "runtime-dir", "", "runtime context dir (default <volumes>/context, /app/volumes/context in the container)")
	cmd.Flags().StringVar(&opts.templates, "templates", "", "templates dir (default: the templates built into the binary)")
	cmd.Flags().StringVar(&opts.output, "output", "", "write to FILE (atomically) instead of stdout")
	return cmd
}

func runContext(cmd *cobra.Command, f *cmdutil.Factory, opts *contextOptions) error {
	if opts.taskID == "" {
		return cmdutil.UsageError(errors.New("--task-id is required: the id of the task whose context to combine"))
	}
	if err := protocol.ValidateID(opts.taskID); err != nil {
		return cmdutil.UsageError(fmt.Errorf("--task-id: %w", err))
	}
	runtimeDir, workspace, err := contextDirs(cmd, f, opts.runtimeDir)
	if err != nil {
		return err
	}
	templates := layers.Embedded()
	if opts.templates != "" {
		fi, err := os.Stat(opts.templates)
		if err != nil || !fi.IsDir() {
			return cmdutil.UsageError(fmt.Errorf("--templates %s: not a readable directory", opts.templates))
		}
		templates = os.DirFS(opts.templates)
	}
	out, err := layers.Combine(layers.Options{TaskID: opts.taskID, RuntimeDir: runtimeDir, Templates: templates, Workspace: workspace})
	if err != nil {
		return cmdutil.Failed(fmt.Errorf("combine context for task %s: %w", opts.taskID, err))
	}
	if opts.output != "" {
		if err := protocol.WriteFileAtomic(opts.output, []byte(out), 0o644); err != nil {
			return cmdutil.Failed(fmt.Errorf("--output: %w", err))
		}
		return nil
	}
	_, err = fmt.Fprint(f.IO.Out, out)
	return err
}

// contextDirs picks the runtime dir: the flag, else the container's dir
// when it exists and --volumes was not set anywhere, else
// <volumes>/context; and the workspace whose AGENTS.md is read: the
// configured one (--workspace, else <volumes>/workspace), the container's
// when its runtime dir is used.
func contextDirs(cmd *cobra.Command, f *cmdutil.Factory, flag string) (runtimeDir, workspace string, err error) {
	l, err := f.Config(cmd)
	if err != nil {
		return "", "", err
	}
	layout, err := volume.New(l.VolumesDir, l.WorkspaceDir)
	if err != nil {
		return "", "", cmdutil.UsageError(err)
	}
	if flag != "" {
		return flag, layout.Workspace(), nil
	}
	if l.Sources["volumes_dir"] == config.SourceDefault {
		if fi, err := os.Stat(containerContextDir); err == nil && fi.IsDir() {
			workspace := layout.Workspace()
			if l.WorkspaceDir == "" {
				workspace = containerWorkspaceDir
			}
			return containerContextDir, workspace, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", cmdutil.Failed(fmt.Errorf("runtime context dir %s: %w", containerContextDir, err))
		}
	}
	return layout.Context(), layout.Workspace(), nil
}
