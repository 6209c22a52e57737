package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/secretenv"
)

//go:embed shell_exec.md
var shellExecDescription string

const (
	shellMaxTimeout = 600 * time.Second
	// pipeDrainGrace is how long output is still read after the process group
	// was killed; only a process that left the group (setsid) can hold the
	// pipe open longer, and its output is then abandoned.
	pipeDrainGrace = 2 * time.Second
)

type shellExecParams struct {
	Command        string `json:"command" description:"Shell command to run in the workspace root"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" description:"Timeout in seconds (default 120, max 600)"`
}

// NewShellExec returns the shell_exec tool. A non-zero exit code is not an
// error result: the model needs the output either way, and the content
// states the exit code plainly. Only a timeout is an error result.
func NewShellExec(ws *Workspace, opts Options) Tool {
	opts = opts.withDefaults()
	return NewFunc("shell_exec", shellExecDescription, false,
		func(ctx context.Context, p shellExecParams) (Result, error) { return shellExec(ctx, ws, opts, p) })
}

func shellExec(ctx context.Context, ws *Workspace, opts Options, p shellExecParams) (Result, error) {
	if strings.TrimSpace(p.Command) == "" {
		return errorResult("command is empty: give the shell command to run"), nil
	}
	if p.TimeoutSeconds < 0 {
		return errorResult("timeout_seconds must be positive (default %d, max %d)",
			int(opts.ShellTimeout.Seconds()), int(shellMaxTimeout.Seconds())), nil
	}
	timeout := opts.ShellTimeout
	if p.TimeoutSeconds > 0 {
		timeout = min(time.Duration(p.TimeoutSeconds)*time.Second, shellMaxTimeout)
	}

	res, err := Shell(ctx, ws, opts, p.Command, timeout)
	if err != nil && !res.Cancelled {
		return Result{}, fmt.Errorf("shell_exec: %w", err)
	}
	content := res.Output
	if strings.TrimSpace(content) == "" {
		content = "(no output)"
	}
	switch {
	case res.Cancelled:
		return Result{Content: content + "\n\ncancelled", IsError: true},
			fmt.Errorf("shell_exec %q: %w", p.Command, ctx.Err())
	case res.TimedOut:
		return Result{Content: fmt.Sprintf("%s\n\ntimed out after %s; the command and its child processes were killed. Run it with a larger timeout_seconds (max %d) or make it faster",
			content, timeout, int(shellMaxTimeout.Seconds())), IsError: true}, nil
	}
	return Result{Content: content + "\n\n" + res.Status}, nil
}

// ShellResult is what a command run by Shell did.
type ShellResult struct {
	Output    string // stdout and stderr as they came, head and tail kept within the output cap, secrets redacted
	ExitCode  int
	Status    string // "exit code: N", with the signal that killed it
	TimedOut  bool
	Cancelled bool
}

// Shell runs command with /bin/sh -c in the workspace root as shell_exec
// does: the environment without the API key, the output capped, the whole
// process group killed at the timeout or when ctx ends. It is also how a
// task's setup command runs before its agent starts.
func Shell(ctx context.Context, ws *Workspace, opts Options, command string, timeout time.Duration) (ShellResult, error) {
	opts = opts.withDefaults()
	pr, pw, err := os.Pipe()
	if err != nil {
		return ShellResult{}, fmt.Errorf("create output pipe: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = ws.Root()
	cmd.Env = shellEnv(os.Environ(), opts.Env, opts.HideEnv)
	// One *os.File for both streams: the child writes straight into the
	// pipe (no copying goroutine in exec), so Wait returns when the shell
	// exits even if a background child still holds the pipe open.
	cmd.Stdout, cmd.Stderr = pw, pw
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return ShellResult{}, fmt.Errorf("start /bin/sh: %w", err)
	}
	pw.Close()

	out := newHeadTail(opts.OutputCap)
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, pr)
		close(drained)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	var res ShellResult
	select {
	case waitErr = <-exited:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}
	// Whatever ended the wait, nothing the command started may outlive it.
	killProcessGroup(cmd)
	if res.TimedOut || res.Cancelled {
		waitErr = <-exited
	}
	drainTimer := time.NewTimer(pipeDrainGrace)
	select {
	case <-drained:
	case <-drainTimer.C:
		pr.Close() // unblocks the copy; output after this point is lost
		<-drained
	}
	drainTimer.Stop()
	pr.Close()

	res.Output = Redact(strings.TrimRight(out.String(), "\n"), opts.Secrets)
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Status = exitStatus(cmd, waitErr)
	if res.Cancelled {
		return res, ctx.Err()
	}
	return res, nil
}

func exitStatus(cmd *exec.Cmd, waitErr error) string {
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return fmt.Sprintf("exit code: unknown (%v)", waitErr)
	}
	if sig := signalOf(cmd.ProcessState); sig != "" {
		return fmt.Sprintf("exit code: %d (killed by signal %s)", cmd.ProcessState.ExitCode(), sig)
	}
	return fmt.Sprintf("exit code: %d", cmd.ProcessState.ExitCode())
}

// shellEnv is the inherited environment minus the LLM API key and the
// hidden names (the model must never be able to read them), plus settings
// that keep common tools from waiting for a terminal, plus the caller's
// extra entries.
func shellEnv(base, extra, hide []string) []string {
	env := make([]string, 0, len(base)+len(extra)+5)
	keep := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		if !secretenv.IsKey(name) && !slices.Contains(hide, name) {
			env = append(env, kv)
		}
	}
	for _, kv := range base {
		keep(kv)
	}
	for _, kv := range []string{"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "DEBIAN_FRONTEND=noninteractive"} {
		keep(kv)
	}
	for _, kv := range extra {
		keep(kv)
	}
	return env
}

// Redact replaces every secret (of a useful length, 6+ bytes) in s.
func Redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 6 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}
