// Package local runs `codingagent watch` as a subprocess of planagent on the
// same volumes: one watcher serves every attempt in the copy its command
// names. No isolation: for development and machines without Docker. It
// links neither the Docker nor the Kubernetes client.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/fswatch"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/agentbin"
	"github.com/codeagent/codeagent/planagent/internal/runtime/agentlog"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// Options configure the local runtime.
type Options struct {
	Volumes volume.Layout
	// Binary is the codingagent executable; "" finds it next to Executable or on PATH.
	Binary     string
	Executable string
	// Env is added to the watcher's environment (the LLM settings).
	Env []string
	// APIKey reaches the watcher on a pipe (config.APIKeyFDEnv), never in its
	// environment; OPENAI_API_KEY is removed from what it inherits. With a
	// Gateway it is not handed over at all: the watcher gets a token of its
	// own on the pipe and the gateway's URL as OPENAI_BASE_URL.
	APIKey string
	// Gateway, when set, serves the model API to the watcher on loopback:
	// the key stays in planagent. One watcher runs every attempt, so its
	// token lives as long as the watcher process.
	Gateway Gateway
	// Args are extra arguments after `watch` (for example --config FILE).
	Args         []string
	Log          io.Writer // the watcher's output, each line prefixed
	Logger       *slog.Logger
	StartTimeout time.Duration // default 20s
	StopGrace    time.Duration // SIGTERM → SIGKILL, default 15s
	Verbose      bool          // show the watcher's INFO log lines too
	// Watch opens the heartbeats' watcher; without file events the watcher
	// process is told to poll too (nil: fsnotify, its own fallback).
	Watch *fswatch.Opener
}

// Gateway serves the model API with the provider's key, which it alone
// holds (planagent/internal/gateway): the watcher gets a token of its own
// and the gateway's URL instead of the key.
type Gateway interface {
	// Listen serves on addr (port 0: any) and returns the address got.
	Listen(addr string) (*net.TCPAddr, error)
	// Issue makes a token for name and the function that revokes it.
	Issue(name string) (token string, revoke func(), err error)
	// Path is the base path of the model API, which the watcher's base URL
	// keeps so its client builds the provider's paths.
	Path() string
}

// Local runs `codingagent watch` as a subprocess on the same volumes: no
// isolation, for development and machines without Docker.
type Local struct {
	opts   Options
	exited chan attempt.Exit
	// gatewayBase is the gateway's base URL on loopback; "" without one.
	gatewayBase string
	mu          sync.Mutex
	proc        *localProc // the watcher Start launched last
}

// localProc is one watcher process. Its stop flag is its own: a process
// stopped before a restart must not have its exit reported against the
// new one.
type localProc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	stopped atomic.Bool   // Stop asked for the exit
}

// New checks the binary and returns the runtime.
func New(opts Options) (*Local, error) {
	if opts.Binary == "" {
		b, err := agentbin.Find(opts.Executable)
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 20 * time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 15 * time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Local{opts: opts, exited: make(chan attempt.Exit, 1)}
	if opts.Gateway != nil {
		addr, err := opts.Gateway.Listen("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		l.gatewayBase = "http://" + addr.String() + opts.Gateway.Path()
	}
	return l, nil
}

// Start launches a watcher of its own (another live watcher on the same
// volumes is harmless: claims make each command run once) and returns once a
// fresh heartbeat appears.
func (l *Local) Start(ctx context.Context) error {
	watchers := l.opts.Volumes.Watchers()
	if err := os.MkdirAll(watchers, 0o755); err != nil {
		return fmt.Errorf("watchers dir: %w", err)
	}
	w := l.opts.Watch.Watch(watchers)
	defer fswatch.Close(w)
	var poll <-chan time.Time
	if w == nil {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	since := time.Now().Add(-time.Second)
	args := append([]string{"watch", "--volumes", l.opts.Volumes.Root, "--workspace", l.opts.Volumes.Workspace()}, l.opts.Args...)
	if l.opts.Watch.Polling() {
		// It would fail to get events too, and say so a second time.
		args = append(args, "--poll", "1s")
	}
	cmd := exec.Command(l.opts.Binary, args...)
	cmd.Env = attempt.WithoutKey(append(os.Environ(), l.opts.Env...))
	key, revoke := l.opts.APIKey, func() {}
	if l.gatewayBase != "" {
		token, rev, err := l.opts.Gateway.Issue("local-watcher")
		if err != nil {
			return err
		}
		key, revoke = token, rev
		// The gateway is on this process's loopback, which is the
		// watcher's too: no loopback host may rewrite it (planagent in a
		// compose container has CODEAGENT_LOOPBACK_HOST for its own URL,
		// which the gateway then uses). Last wins in exec's environment:
		// the gateway, not the provider.
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, config.LoopbackHostEnv+"=") })
		cmd.Env = append(cmd.Env, "OPENAI_BASE_URL="+l.gatewayBase)
	}
	keyPipe, err := keyPipe(key)
	if err != nil {
		revoke()
		return err
	}
	if keyPipe != nil {
		defer keyPipe.Close()
		cmd.ExtraFiles = []*os.File{keyPipe} // fd 3
		cmd.Env = append(cmd.Env, config.APIKeyFDEnv+"=3")
	}
	out := agentlog.NewPrefixWriter(l.opts.Log, "[codingagent] ")
	if !l.opts.Verbose {
		out.Keep = agentlog.WarningsOnly
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group: the terminal's Ctrl-C reaches planagent, which
	// stops the watcher itself; Pdeathsig stops it if planagent is killed.
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		revoke()
		return fmt.Errorf("start %s: %w", l.opts.Binary, err)
	}
	p := &localProc{cmd: cmd, done: make(chan struct{})}
	done := p.done
	l.mu.Lock()
	l.proc = p
	l.mu.Unlock()
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		revoke() // the watcher's token ends with it
		if waitErr == nil {
			// A watcher exits by itself only when something is wrong,
			// even with status 0: say how, as Wait does for other codes.
			waitErr = errors.New("exit status 0")
		}
		out.Flush()
		// Read before done is closed: Stop returns once done is, and a
		// restart may follow at once.
		stopped := p.stopped.Load()
		close(done)
		if !stopped {
			select {
			case l.exited <- attempt.Exit{Err: fmt.Errorf("codingagent watch (pid %d) exited: %w", cmd.Process.Pid, waitErr)}:
			default:
			}
		}
	}()
	deadline := time.NewTimer(l.opts.StartTimeout)
	defer deadline.Stop()
	for {
		if h, ok := protocol.LatestHeartbeat(watchers); ok && h.BeatSince(since) {
			l.opts.Logger.Info("codingagent watch started", "pid", cmd.Process.Pid)
			return nil
		}
		select {
		case <-fswatch.Events(w):
		case <-fswatch.Errors(w):
		case <-poll:
		case <-done:
			return fmt.Errorf("codingagent watch exited before its first heartbeat: %w (its output is above)", waitErr)
		case <-deadline.C:
			_ = l.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("codingagent watch wrote no heartbeat within %s", l.opts.StartTimeout)
		case <-ctx.Done():
			_ = l.Stop(context.WithoutCancel(ctx))
			return ctx.Err()
		}
	}
}

// Exited delivers the watcher's unexpected exit.
func (l *Local) Exited() <-chan attempt.Exit { return l.exited }

// Launch does nothing: the one watcher process takes every command and
// works in the copy it names.
func (l *Local) Launch(context.Context, attempt.Attempt) error { return nil }

// Abandon does nothing: the shared watcher runs every task and cannot stop
// one alone. It needs not: the agent ends a task at the same task timeout
// itself (its commands' process groups killed), and a late report of an
// abandoned attempt is ignored as stale.
func (l *Local) Abandon(context.Context, string, int) error { return nil }

// Exec runs command with sh -c in dir.
func (l *Local) Exec(ctx context.Context, dir, command string, timeout time.Duration) (attempt.ExecResult, error) {
	return attempt.ShellExec(ctx, dir, command, timeout)
}

// Stop sends SIGTERM (the watcher finishes or interrupts its tasks within its
// grace) and SIGKILL after StopGrace.
func (l *Local) Stop(ctx context.Context) error {
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	p.stopped.Store(true)
	cmd, done := p.cmd, p.done
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(l.opts.StopGrace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return nil
}
