//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
)

const oneTaskPlan = `{"title":"Notes","overview":"One file.","tasks":[
 {"id":"notes","title":"Write the notes","description":"TOKEN-NOTES: write notes.md","dependencies":[]}]}`

func oneTask() []scriptTask {
	return []scriptTask{{token: "TOKEN-NOTES", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "notes.md", "content": "# Notes\n"})}}}
}

// /dev/null is a character device but not a terminal: `run … </dev/null`
// must not ask. On a real terminal (a pty) it asks, and "n" stops it.
func TestE2ERunAsksOnlyOnATerminal(t *testing.T) {
	t.Run("stdin /dev/null", func(t *testing.T) {
		e := newRunEnv(t, &fakeModel{plan: oneTaskPlan, tasks: oneTask()})
		cmd := e.command("run", "--runtime", "local", "make the notes")
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer devnull.Close()
		cmd.Stdin = devnull
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("run: %v\n%s", err, errb.String())
		}
		if strings.Contains(errb.String(), "Proceed?") {
			t.Errorf("asked with stdin /dev/null:\n%s", errb.String())
		}
		if got := e.read("workspace/notes.md"); got != "# Notes\n" {
			t.Errorf("notes.md = %q", got)
		}
	})
	t.Run("a terminal", func(t *testing.T) {
		e := newRunEnv(t, &fakeModel{plan: oneTaskPlan, tasks: oneTask()})
		var made []string
		out := runOnTerminal(t, e, "n", func() { made = waitForCopies(t, e, 1) }, "run", "--runtime", "local", "make the notes")
		if !strings.Contains(out, "Proceed? [Y/n]") || !strings.Contains(out, "Not run.") {
			t.Errorf("terminal:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(e.volumes, "workspace", "notes.md")); err == nil {
			t.Error("the plan ran after the answer n")
		}
		// What was prepared for the attempts while the question waited is gone.
		if len(made) == 0 {
			t.Error("no copy was prepared while the question waited")
		}
		staging, _ := filepath.Glob(filepath.Join(e.volumes, "attempts", ".pool", "*.staging"))
		if copies := pooledCopies(t, e); len(copies) != 0 || len(staging) != 0 {
			t.Errorf("copies left after a run that did not start: %v %v", copies, staging)
		}
	})
}

// While the plan awaits confirmation, the attempts' first copies are made
// (on a large tree each costs seconds): the run's attempts take them, and
// when the run ends none is left.
func TestE2EPrewarmWhileThePlanAwaitsConfirmation(t *testing.T) {
	e := newRunEnv(t, &fakeModel{plan: oneTaskPlan, tasks: oneTask()})
	var seen []string
	// The pool of a run with --parallel 2 holds three copies.
	out := runOnTerminal(t, e, "y", func() { seen = waitForCopies(t, e, 3) },
		"run", "--runtime", "local", "--parallel", "2", "make the notes")
	if len(seen) != 3 {
		t.Errorf("copies prepared while the question waited: %v, want 3\n%s", seen, out)
	}
	if got := e.read("workspace/notes.md"); got != "# Notes\n" {
		t.Errorf("notes.md = %q after the answer y\n%s", got, out)
	}
	if copies := pooledCopies(t, e); len(copies) != 0 {
		t.Errorf("copies left after the run: %v", copies)
	}
}

// runOnTerminal runs planagent with a pty as its terminal, answers its
// question once it is asked (after wait, when given) and returns the screen.
func runOnTerminal(t *testing.T, e *runEnv, answer string, wait func(), args ...string) string {
	t.Helper()
	cmd := e.command(args...)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := make(chan string, 1)
	go func() {
		var all strings.Builder
		r := bufio.NewReader(ptmx)
		asked := false
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			all.Write(buf[:n])
			if !asked && strings.Contains(all.String(), "Proceed? [Y/n]") {
				asked = true
				if wait != nil {
					wait()
				}
				_, _ = ptmx.Write([]byte(answer + "\r"))
			}
			if err != nil {
				screen <- all.String()
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("run did not end after the answer %s", answer)
	}
	ptmx.Close()
	return <-screen
}

// waitForCopies waits up to 20 s for n finished copies in the pool and
// returns those there are.
func waitForCopies(t *testing.T, e *runEnv, n int) []string {
	var copies []string
	poll.Wait(t.Context(), 20*time.Second, func() bool {
		copies = pooledCopies(t, e)
		return len(copies) >= n
	})
	return copies
}

// pooledCopies lists the finished workspace copies kept for reuse under
// the volumes' attempts/.pool.
func pooledCopies(t *testing.T, e *runEnv) []string {
	t.Helper()
	var out []string
	pools, _ := filepath.Glob(filepath.Join(e.volumes, "attempts", ".pool", "*"))
	for _, p := range pools {
		if strings.HasSuffix(p, ".staging") {
			continue // copies being made
		}
		entries, _ := os.ReadDir(p)
		for _, c := range entries {
			out = append(out, filepath.Join(filepath.Base(p), c.Name()))
		}
	}
	return out
}

// What a new user types first gets an answer that says what to do.
func TestE2EStartingMistakes(t *testing.T) {
	e := newRunEnv(t, &fakeModel{plan: oneTaskPlan, tasks: oneTask()})
	missing := filepath.Join(e.dir, "no-such-dir")
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{args: []string{"run", "Make", "the", "notes", "files"}, code: 2, want: []string{"quote it", `planagent run "Make the notes files"`}},
		{args: []string{"--version"}, code: 0, want: []string{"planagent "}},
		{args: []string{"run", "--paralel", "2", "x"}, code: 2, want: []string{"unknown flag: --paralel", "did you mean --parallel?"}},
		{args: []string{"--paralel", "2"}, code: 2, want: []string{"unknown flag: --paralel", "did you mean --parallel? It is a flag of planagent resume and planagent run"}},
		{args: []string{"run", "--yes", "--workspace", missing, "x"}, code: 2, want: []string{"workspace " + missing + " does not exist"}},
		{args: []string{"__complete", "run", "--runtime", ""}, code: 0, want: []string{"docker\nlocal\n"}},
	}
	for _, tt := range tests {
		out, stderr, code := e.run(tt.args...)
		for _, w := range tt.want {
			if code != tt.code || !strings.Contains(out+stderr, w) {
				t.Errorf("planagent %s: exit %d (want %d), output lacks %q:\n%s%s", strings.Join(tt.args, " "), code, tt.code, w, out, stderr)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
}

// `--workspace .` run from a project whose volumes dir is inside it: the
// run says where it works, warns, and the volumes stay out of what the
// planner and the agent see.
func TestE2EVolumesInsideTheWorkspace(t *testing.T) {
	f := &fakeModel{plan: oneTaskPlan, tasks: []scriptTask{{token: "TOKEN-NOTES", steps: []llmtest.ToolCall{
		llmtest.Call("list_dir", map[string]any{"path": "."}),
		llmtest.Call("read_file", map[string]any{"path": "volumes/context/project/project-overview.md"}),
		llmtest.Call("write_file", map[string]any{"path": "notes.md", "content": "# Notes\n"}),
	}}}}
	e := newRunEnv(t, f)
	if err := os.WriteFile(filepath.Join(e.dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run("run", "--yes", "--runtime", "local", "--workspace", ".", "make the notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, w := range []string{"workspace: " + e.dir + "\n", "warning: the volumes dir " + e.volumes + " is inside the workspace", "add /volumes/ to the workspace's .gitignore"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Index(stderr, "workspace: ") > strings.Index(stderr, "Plan: ") {
		t.Errorf("the workspace line is not among the first lines:\n%s", stderr)
	}
	// What the workspace showed the planner and the agent (the memory
	// request replays the model's own calls, which name the path it tried).
	var seen strings.Builder
	for _, req := range e.srv.Requests() {
		if strings.HasPrefix(req.Messages[0].Content, "You maintain the long-term memory") {
			continue
		}
		for _, m := range req.Messages {
			seen.WriteString(m.Content + "\n")
		}
	}
	s := seen.String()
	if !strings.Contains(s, "main.go") {
		t.Fatalf("the workspace listing never reached the model:\n%s", s)
	}
	refusal := `path "volumes/context/project/project-overview.md" is in volumes/, which is not part of the workspace (planagent's volumes)`
	if !strings.Contains(s, refusal) {
		t.Errorf("reading a file of the volumes was not refused:\n%s", s)
	}
	// The attempt's own copy of the workspace lives under the volumes
	// (attempts/<run>/<task>.<n>): its path is the one mention allowed.
	s = regexp.MustCompile(`\S*/volumes/attempts/\S*`).ReplaceAllString(s, "<attempt copy>")
	if i := strings.Index(strings.ReplaceAll(s, refusal, ""), "volumes"); i >= 0 {
		t.Errorf("the volumes dir reached the model: …%s…", s[max(0, i-200):min(len(s), i+200)])
	}
	if _, err := os.Stat(filepath.Join(e.dir, "notes.md")); err != nil {
		t.Errorf("notes.md not written in the workspace: %v", err)
	}
}
