// Package attempt holds what the orchestrator and a runtime exchange about
// a task attempt: the Attempt handed to Launch, the Exit of an agent that
// died without a report, and the ExecResult of an acceptance command, with
// ShellExec, how a command runs on the host. It imports neither the Docker
// nor the Kubernetes client, so the orchestrator (and its tests) link
// neither: package runtime has the runtimes and aliases these types.
package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codeagent/codeagent/internal/config"
)

// Attempt is one attempt at one task, as the orchestrator hands it to a
// runtime once its command file is written.
type Attempt struct {
	RunID, TaskID string
	Attempt       int
	Dir           string // host path of the workspace the attempt works in (its own copy)
	Rel           string // the same, relative to the volumes root, as the command names it
	// Stem names its command, report and events files in the volumes
	// (protocol.Stem): "" for a task of one attempt, whose files are
	// named by its id.
	Stem string
}

// Files is the name of the attempt's command, report and events files in
// the volumes, without their extension.
func (a Attempt) Files() string {
	if a.Stem != "" {
		return a.Stem
	}
	return a.TaskID
}

// Name is the attempt's name at the model gateway: its token is issued to
// it and its tokens are counted under it.
func (a Attempt) Name() string { return Name(a.TaskID, a.Attempt) }

// Name is the gateway name of attempt n of task id.
func Name(id string, n int) string { return fmt.Sprintf("%s.%d", id, n) }

// ParseName is the task and attempt of a Name; ok is false for anything
// else. A task id may hold dots: the attempt is the last part.
func ParseName(name string) (id string, n int, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return name[:i], n, true
}

// Exit is an agent dying before it reported: the attempt of TaskID, or the
// shared watcher serving every task when TaskID is "".
type Exit struct {
	TaskID string
	// Attempt is the attempt whose agent died (0: not known). Its death
	// may be noticed only after the orchestrator dispatched the next
	// attempt of the task, which must not be taken for dead with it.
	Attempt int
	Err     error
	// Unfenced: what ran the attempt could not be shown gone (its container
	// could not be removed), so its copy must be deleted, never reused.
	Unfenced bool
}

// ExecResult is an acceptance command's output (combined, capped) and exit code.
type ExecResult struct {
	Output   string
	ExitCode int
}

// ShellExec runs command with /bin/sh -c in dir, killing its whole process
// group at the timeout. Output is combined and capped.
func ShellExec(ctx context.Context, dir, command string, timeout time.Duration) (ExecResult, error) {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = WithoutKey(os.Environ())
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("run %q: %w", command, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		return ExecResult{Output: capOutput(buf.String()), ExitCode: -1}, fmt.Errorf("%q: %w", command, ctx.Err())
	}
	res := ExecResult{Output: capOutput(buf.String())}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("run %q: %w", command, err)
	}
	return res, nil
}

func capOutput(s string) string {
	const max = 20000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + fmt.Sprintf("\n[... %d bytes omitted ...]\n", len(s)-max) + s[len(s)-max/2:]
}

// WithoutKey drops the API key (and a stale descriptor number) from env:
// neither the watcher nor an acceptance command gets it in its environment.
func WithoutKey(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !config.IsKeyEnv(name) && name != config.APIKeyFDEnv {
			out = append(out, kv)
		}
	}
	return out
}
