package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

const (
	// execOutputCap bounds what Exec keeps of a command's output; the end is
	// kept because failures are reported last.
	execOutputCap = 256 << 10
	// timeoutExitCode is what Exec reports for a command it had to kill,
	// the same as GNU timeout(1).
	timeoutExitCode = 124
	// execKillAfter is how long a timed-out command gets after SIGTERM.
	execKillAfter = 5
)

// Exec runs command with sh -c in the workspace of the watcher's container,
// as the container's user, and returns its combined output and exit code.
// The API key is blanked in its environment: acceptance commands don't need
// it and their output is shown to people and to the LLM.
func (d *Docker) Exec(ctx context.Context, command string, timeout time.Duration) (ExecResult, error) {
	d.mu.Lock()
	target := d.target
	d.mu.Unlock()
	if target == "" {
		return ExecResult{}, errors.New("docker runtime: Exec before Start: start the runtime first")
	}
	cmd := []string{"sh", "-c", command}
	if timeout > 0 {
		// The engine has no way to kill an exec'd process, so timeout(1) in
		// the container does it; the ctx deadline only frees this side.
		secs := strconv.Itoa(int(math.Ceil(timeout.Seconds())))
		cmd = append([]string{"timeout", "-k", strconv.Itoa(execKillAfter), secs}, cmd...)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+(execKillAfter+5)*time.Second)
		defer cancel()
	}
	started := time.Now()
	created, err := d.api.ExecCreate(ctx, target, client.ExecCreateOptions{
		AttachStdout: true,
		AttachStderr: true,
		WorkingDir:   containerWorkspace,
		Env:          []string{"OPENAI_API_KEY="},
		Cmd:          cmd,
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("create exec in codingagent container %s: %w", shortID(target), err)
	}
	attached, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("attach to exec in codingagent container %s: %w", shortID(target), err)
	}
	// Closing the connection is the only way to unblock the read on cancel.
	stop := context.AfterFunc(ctx, attached.Close)
	out := &tailBuffer{limit: execOutputCap}
	_, copyErr := stdcopy.StdCopy(out, out, attached.Reader)
	stop()
	attached.Close()
	output := redact(out.String(), d.opts.Env["OPENAI_API_KEY"])
	if ctx.Err() != nil {
		return ExecResult{Output: output, ExitCode: -1}, fmt.Errorf("acceptance command in container %s: %w", shortID(target), ctx.Err())
	}
	if copyErr != nil {
		return ExecResult{Output: output}, fmt.Errorf("read output of acceptance command: %w", copyErr)
	}
	inspected, err := d.api.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return ExecResult{Output: output}, fmt.Errorf("exit code of acceptance command: %w", err)
	}
	code := inspected.ExitCode
	// GNU timeout exits 124, busybox's with the signal's 128+n.
	if timeout > 0 && time.Since(started) >= timeout && (code == 124 || code == 128+15 || code == 128+9) {
		code = timeoutExitCode
		output += fmt.Sprintf("\n[command timed out after %s]", timeout)
	}
	return ExecResult{Output: output, ExitCode: code}, nil
}

// tailBuffer keeps the last limit bytes written to it and counts the rest.
type tailBuffer struct {
	limit   int
	buf     []byte
	dropped int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	// Trim in batches so a chatty command does not copy on every write.
	if len(b.buf) > 2*b.limit {
		cut := len(b.buf) - b.limit
		b.dropped += cut
		b.buf = append(b.buf[:0], b.buf[cut:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	s := string(b.buf)
	if len(b.buf) > b.limit {
		cut := len(b.buf) - b.limit
		return fmt.Sprintf("[... %d bytes of output cut ...]\n", b.dropped+cut) + s[cut:]
	}
	if b.dropped > 0 {
		return fmt.Sprintf("[... %d bytes of output cut ...]\n", b.dropped) + s
	}
	return s
}
