package chat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestSimpleQuestionIsDirect: a question the model answers without
// create_plan is a direct-mode response (the mode its response_start event
// names).
func TestSimpleQuestionIsDirect(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(llmtest.Text("Four."))
	e.run("d", "what is 2+2?\n", nil)
	e.noRejections()
	var modes []string
	for _, ev := range e.events.events {
		if ev.Type == events.ResponseStart {
			modes = append(modes, ev.Mode)
		}
		if ev.Type == events.PlanCreated {
			t.Errorf("a direct answer emitted plan_created")
		}
	}
	if strings.Join(modes, ",") != "direct" {
		t.Errorf("response_start modes = %v, want [direct]", modes)
	}
}

// TestFileReferencesInChatInput: @file:KEYWORD attaches the matching file
// to the message the model gets, and a keyword with no match is a warning.
func TestFileReferencesInChatInput(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.ws.Root(), "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ws.Root(), "docs", "notes.txt"), []byte("the mascot is a ZEBRA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv.Enqueue(llmtest.Text("A zebra."), llmtest.Text("Nothing attached."))
	out := e.run("f", "what is the mascot in @file:notes?\nand in @file:nosuchthing?\n", nil)
	e.noRejections()
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2\n%s", len(reqs), out)
	}
	if u := lastUser(reqs[0]); !strings.Contains(u, `<File path="docs/notes.txt">`) || !strings.Contains(u, "the mascot is a ZEBRA") {
		t.Errorf("first message lacks the attached file:\n%s", u)
	}
	if !strings.Contains(out, "warning: ") || !strings.Contains(out, "nosuchthing") {
		t.Errorf("no warning for an @file reference without a match:\n%s", out)
	}
}

// TestApproveAlwaysForTheSession: answering "always" once allows later calls
// of the same tool without asking again.
func TestApproveAlwaysForTheSession(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "one.txt", "content": "1"})),
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "two.txt", "content": "2"})),
		llmtest.Text("both written"),
	)
	out := e.run("al", "write two files\na\n", func(o *Options) { o.Approval = ApproveDefault })
	e.noRejections()
	if n := strings.Count(out, "Allow write_file"); n != 1 {
		t.Errorf("asked %d times, want once (then always):\n%s", n, out)
	}
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, ok := e.file(f); !ok {
			t.Errorf("%s not written:\n%s", f, out)
		}
	}
}

// TestEmptySessionIsNotKept: a chat in which nothing was asked leaves no
// session behind, so --continue still finds the last real conversation.
func TestEmptySessionIsNotKept(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(llmtest.Text("Noted."))
	e.run("real", "remember the number 7\n", nil)
	e.run("empty", "/help\n/sessions\n/exit\n", nil)
	if _, err := os.Stat(SessionPath(e.sessions, "empty")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the empty session's log is kept: %v", err)
	}
	id, _, err := ResolveSession(e.sessions, true, "", time.Now())
	if err != nil || id != "real" {
		t.Errorf("--continue after an empty chat = %q, %v; want the real session", id, err)
	}
}
