package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// UIOptions are the flags of `planagent ui`.
type UIOptions struct {
	Addr string
}

// NewCmdUI builds `planagent ui`.
func NewCmdUI(f *cmdutil.Factory, runF func(*cobra.Command, *UIOptions) error) *cobra.Command {
	opts := &UIOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local, read-only web view of the runs",
		Long: `Serve a web page of the runs under the volumes: the list of runs; a run's task
graph coloured by status and updated live as the run goes (server-sent
events), the timeline of attempts, per-task tokens, cost and time, the running
task's events as they come, and each task's report and diff. It only reads,
works offline (its assets are in the binary) and listens on the loopback
interface unless --addr says otherwise. Stop it with Ctrl-C.

planagent run --ui serves the same page for the duration of the run.`,
		Example: `  planagent ui
  planagent ui --addr 127.0.0.1:8080 --volumes ~/work/volumes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd, opts)
			}
			return runUI(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", webui.DefaultAddr, "host:port to listen on")
	return cmd
}

func runUI(cmd *cobra.Command, f *cmdutil.Factory, opts *UIOptions) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	if err := s.ensureVolumes(); err != nil {
		return err
	}
	ln, err := s.listenUI(opts.Addr)
	if err != nil {
		return err
	}
	token := webui.NewToken()
	fmt.Fprintf(f.IO.Err, "web view of %s: %s/?token=%s (Ctrl-C to stop)\n", s.layout.Runs(), webui.URL(ln), token)
	if err := s.serveUI(cmd.Context(), ln, token); err != nil {
		return err
	}
	// Ctrl-C is how the view stops: the usual 130, without an error line.
	return cmdutil.Silent(cmdutil.ExitInterrupted)
}

// listenUI opens the web view's address; a taken or malformed one is a usage error.
func (s *session) listenUI(addr string) (net.Listener, error) {
	ln, warning, err := webui.Listen(addr)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	if warning != "" {
		s.logger.Warn(warning)
	}
	return ln, nil
}

// serveUI serves the web view on ln until ctx ends.
func (s *session) serveUI(ctx context.Context, ln net.Listener, token string) error {
	return webui.New(webui.Options{Layout: s.layout, View: s.viewOptions(), Logger: s.logger, Token: token, Watch: s.watch}).Serve(ctx, ln)
}

// startUI serves the web view of the run on ln in the background (nothing
// when ln is nil); the returned function stops it and waits.
func (s *session) startUI(ctx context.Context, ln net.Listener, runID string) (stop func()) {
	if ln == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	token := webui.NewToken()
	go func() {
		defer close(done)
		if err := s.serveUI(ctx, ln, token); err != nil {
			s.logger.Warn("web view", "err", err)
		}
	}()
	fmt.Fprintf(s.f.IO.Err, "web view: %s/?token=%s#%s\n", webui.URL(ln), token, runID)
	return func() {
		cancel()
		<-done
	}
}
