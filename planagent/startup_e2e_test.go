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
		cmd := e.command("run", "--runtime", "local", "make the notes")
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
					_, _ = ptmx.Write([]byte("n\r"))
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
			t.Fatal("run did not end after the answer n")
		}
		ptmx.Close()
		out := <-screen
		if !strings.Contains(out, "Proceed? [Y/n]") || !strings.Contains(out, "Not run.") {
			t.Errorf("terminal:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(e.volumes, "workspace", "notes.md")); err == nil {
			t.Error("the plan ran after the answer n")
		}
	})
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
