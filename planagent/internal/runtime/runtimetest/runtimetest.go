// Package runtimetest holds what the runtimes' tests share: a codingagent
// built for them, a model that has the agent run shell commands, an
// attempt's command written as the orchestrator writes it, and its report
// waited for. The runtimes are real in those tests; only the model is not.
package runtimetest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// BuildCodingAgent builds codingagent into dir, static as `make build`
// does, so a runtime can bind-mount it into any image, and returns its path.
func BuildCodingAgent(dir string) (string, error) {
	bin := filepath.Join(dir, "codingagent")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/codeagent/codeagent/codingagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New("go build codingagent: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
}

// CodingAgentOnce builds codingagent at most once for a test binary, in a
// directory of its own: shared by every test of the binary, so not the
// first caller's t.TempDir(). TestMain calls Remove after m.Run.
type CodingAgentOnce struct {
	once sync.Once
	path string
	err  error
}

// Path builds codingagent on the first call and returns its path; a failed
// build fails every test that asks.
func (c *CodingAgentOnce) Path(t testing.TB) string {
	t.Helper()
	c.once.Do(func() {
		dir, err := os.MkdirTemp("", "codeagent-runtime-test-") //nolint:usetesting // outlives the first caller's test: Remove takes it
		if err != nil {
			c.err = err
			return
		}
		c.path, c.err = BuildCodingAgent(dir)
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.path
}

// Remove deletes what Path built, if anything.
func (c *CodingAgentOnce) Remove() {
	if c.path != "" {
		_ = os.RemoveAll(filepath.Dir(c.path))
	}
}

// LogWriter routes a runtime's output (slog or the agent's lines) into the test log.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ShellModel has the agent run each of the task's shell commands, one per
// turn, then answer with what they printed.
func ShellModel(commands ...string) func(llmtest.Request) llmtest.Reply {
	return func(req llmtest.Request) llmtest.Reply {
		var outputs []string
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				outputs = append(outputs, m.Content)
			}
		}
		if len(outputs) < len(commands) {
			return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": commands[len(outputs)]}))
		}
		if len(req.Tools) == 0 {
			return llmtest.Text("- nothing to remember") // the memory update
		}
		return llmtest.Text("Ran it:\n" + strings.Join(outputs, "\n"))
	}
}

// NewAttempt writes the command of task id's first attempt, working in a
// fresh copy (a plain directory here), and returns the attempt as the
// orchestrator hands it over.
func NewAttempt(t *testing.T, l volume.Layout, runID, id string) attempt.Attempt {
	t.Helper()
	a := attempt.Attempt{RunID: runID, TaskID: id, Attempt: 1, Dir: l.Attempt(runID, id, 1), Rel: l.AttemptRel(runID, id, 1)}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	WriteCommand(t, l, a)
	return a
}

// WriteCommand writes the command of attempt a, working in its copy.
func WriteCommand(t testing.TB, l volume.Layout, a attempt.Attempt) {
	t.Helper()
	cmd := &protocol.Command{ID: a.TaskID, RunID: a.RunID, Attempt: a.Attempt, Title: "task " + a.TaskID,
		Body: "Do task " + a.TaskID + ".", Workspace: a.Rel}
	if err := protocol.WriteCommand(l.CommandFile(a.TaskID), cmd); err != nil {
		t.Fatal(err)
	}
}

// WaitReport waits (up to a minute) for the report of id's first attempt.
func WaitReport(t *testing.T, l volume.Layout, id string) *protocol.Report {
	t.Helper()
	var rep *protocol.Report
	poll.Until(t, time.Minute, "the report of "+id+" attempt 1", func() bool {
		r, err := protocol.ReadReport(l.ReportFile(id))
		rep = r
		return err == nil && r.Attempt == 1
	})
	return rep
}
