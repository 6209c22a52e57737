package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestShellExec(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret-do-not-leak")
	ws := newTestWorkspace(t, map[string]string{"hello.txt": "hi there\n"})
	tests := []struct {
		name    string
		args    map[string]any
		opts    Options
		isError bool
		want    []string
		notWant []string
	}{
		{"runs in the workspace root", args{"command": "cat hello.txt && pwd"}, Options{}, false,
			[]string{"hi there\n" + ws.Root() + "\n\nexit code: 0"}, nil},
		{"stderr combined", args{"command": "echo out; echo err >&2"}, Options{}, false, []string{"out\nerr\n"}, nil},
		{"non-zero exit is not an error result", args{"command": "echo failing; exit 3"}, Options{}, false,
			[]string{"failing", "exit code: 3"}, nil},
		{"no output", args{"command": "true"}, Options{}, false, []string{"(no output)\n\nexit code: 0"}, nil},
		{"api key removed", args{"command": "env"}, Options{Env: []string{"EXTRA=1", "OPENAI_API_KEY=again"}}, false,
			[]string{"EXTRA=1", "GIT_PAGER=cat"}, []string{"OPENAI_API_KEY", "sk-test-secret"}},
		{"secrets redacted from output", args{"command": "echo key=sk-test-secret-do-not-leak"}, Options{Secrets: []string{"sk-test-secret-do-not-leak"}}, false,
			[]string{"key=[redacted]"}, []string{"sk-test-secret"}},
		{"stdin is empty", args{"command": "cat; echo done"}, Options{}, false, []string{"done\n\nexit code: 0"}, nil},
		{"killed by signal", args{"command": "kill -9 $$"}, Options{}, false, []string{"killed by signal killed"}, nil},
		{"empty command", args{"command": "  "}, Options{}, true, []string{"command is empty"}, nil},
		{"negative timeout", args{"command": "true", "timeout_seconds": -1}, Options{}, true, []string{"must be positive"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Call(t.Context(), NewSet(NewShellExec(ws, tt.opts)), "shell_exec", mustJSON(t, tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v: %s", res.IsError, res.Content)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content %q does not contain %q", res.Content, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.Content, w) {
					t.Errorf("content contains %q", w)
				}
			}
		})
	}
}

// TestShellExecKillsProcessGroup starts a background child that would
// outlive the shell and checks it is dead after the call, both when the
// call times out, when the shell exits on its own and when ctx is cancelled.
func TestShellExecKillsProcessGroup(t *testing.T) {
	t.Parallel() // the timeout case waits 1s: overlapped with the rest
	tests := []struct {
		name      string
		command   string
		timeout   int
		cancel    bool
		isError   bool
		wantGoErr bool
		want      string
	}{
		{"timeout", "sleep 300 & echo $! > child.pid; echo started; sleep 300", 1, false, true, false,
			"started\n\ntimed out after 1s; the command and its child processes were killed"},
		{"shell exits, background child left", "sleep 300 & echo $! > child.pid; echo started", 30, false, false, false,
			"started\n\nexit code: 0"},
		{"context cancelled", "sleep 300 & echo $! > child.pid; echo started; sleep 300", 30, true, true, true, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t, nil)
			ctx := t.Context()
			if tt.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				// Cancel once the child has announced itself.
				go func() {
					defer cancel()
					waitFor(t, 10*time.Second, func() bool {
						b, _ := os.ReadFile(filepath.Join(ws.Root(), "child.pid"))
						return strings.HasSuffix(string(b), "\n")
					})
				}()
			}
			start := time.Now()
			res, err := Call(ctx, Coding(ws, Options{}), "shell_exec",
				mustJSON(t, args{"command": tt.command, "timeout_seconds": tt.timeout}))
			if (err != nil) != tt.wantGoErr || (tt.wantGoErr && !errors.Is(err, context.Canceled)) {
				t.Fatalf("err = %v, want Go error: %v", err, tt.wantGoErr)
			}
			if elapsed := time.Since(start); elapsed > 20*time.Second {
				t.Errorf("call took %s: the background child kept it waiting", elapsed)
			}
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("got IsError=%v %q, want IsError=%v and %q", res.IsError, res.Content, tt.isError, tt.want)
			}
			raw, err := os.ReadFile(filepath.Join(ws.Root(), "child.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, func() bool { return processGone(pid) })
		})
	}
}

func TestShellExecOutputCap(t *testing.T) {
	ws := newTestWorkspace(t, nil)
	set := NewSet(NewShellExec(ws, Options{OutputCap: 1000}))
	// 5000 numbered lines of 6 chars ("00001\n"): only the head and tail stay.
	res, err := Call(t.Context(), set, "shell_exec", `{"command": "seq -f %05g 1 5000"}`)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Content
	if !strings.HasPrefix(c, "00001\n00002\n") {
		t.Errorf("head lost: %q", c[:50])
	}
	if !strings.Contains(c, "04999\n05000\n\nexit code: 0") {
		t.Errorf("tail lost: %q", c[len(c)-80:])
	}
	if !strings.Contains(c, fmt.Sprintf("[... %d chars omitted ...]", 30000-1000)) {
		t.Errorf("no omission marker with the right count in %q", c)
	}
	if len(c) > 1200 {
		t.Errorf("output is %d chars, want about the 1000 cap", len(c))
	}
}

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name   string
		cap    int
		writes []string
		want   string
	}{
		{"under cap", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly cap", 4, []string{"abcd"}, "abcd"},
		{"over cap one write", 4, []string{"abcdefgh"}, "ab\n[... 4 chars omitted ...]\ngh"},
		{"over cap many small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n[... 3 chars omitted ...]\nfg"},
		{"wraps ring", 6, []string{"abc", "de", "fgh", "ij"}, "abc\n[... 4 chars omitted ...]\nhij"},
		{"utf8 seams", 4, []string{"ééé"}, "é\n[... 2 chars omitted ...]\né"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHeadTail(tt.cap)
			for _, w := range tt.writes {
				if _, err := h.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// processGone reports whether pid has exited: no such process, or a zombie
// waiting for its (re)parent to reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// waitFor polls cond until it holds or the deadline passes; used only for
// state that has no event to wait on (a process's death seen by a stranger).
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("condition not met within %s", limit)
			return
		}
		<-tick.C
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
