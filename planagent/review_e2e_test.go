//go:build e2e

package main

import (
	"bufio"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// A comment on a line of a completed task's change becomes, on resume, a
// follow-up task that the agent is given (with the comment and the diff),
// carried out and committed on top; the review then says where it went.
func TestE2EReviewCommentBecomesAFollowUpTask(t *testing.T) {
	plan := `{"title":"Greet","overview":"x","tasks":[{"id":"t1","title":"Write greet.txt","description":"TOKEN-GREET: write greet.txt","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		// Listed first: the follow-up's command holds the original task's
		// description in its diff context too.
		{token: "TOKEN-REVIEW", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "greet.txt", "content": "hello, world\n"})}},
		{token: "TOKEN-GREET", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "greet.txt", "content": "hi\n"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	if _, stderr, code := e.run("run", "--yes", "--workspace", ws, "greet"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	runID, _ := e.runState()

	if _, stderr, code := e.run("comment", runID, "t1", "greet.txt:1", "TOKEN-REVIEW: say hello, world instead"); code != 0 {
		t.Fatalf("comment: exit %d\n%s", code, stderr)
	}
	for _, bad := range [][]string{
		{"comment", runID, "nope", "greet.txt:1", "x"},
		{"comment", runID, "t1", "greet.txt", "x"},
		{"comment", runID, "t1", "greet.txt:1", " "},
	} {
		if _, stderr, code := e.run(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", bad, code, stderr)
		}
	}
	out, _, _ := e.run("review", runID)
	if !strings.Contains(out, "t1  greet.txt:1  TOKEN-REVIEW: say hello, world instead  (pending)") {
		t.Errorf("review before resume:\n%s", out)
	}

	out, stderr, code := e.run("resume", "--workspace", ws)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "review: 1 comment(s) on t1 become the task t1-review") {
		t.Errorf("resume does not say what the review became:\n%s", stderr)
	}
	if f.startCount("TOKEN-REVIEW") != 1 {
		t.Fatalf("the follow-up task was started %d times", f.startCount("TOKEN-REVIEW"))
	}
	task := ""
	for _, req := range e.srv.Requests() {
		if u := firstUser(req); strings.Contains(u, "TOKEN-REVIEW") && strings.Contains(u, "Address the review") {
			task = u
			break
		}
	}
	for _, want := range []string{"Address the review of task t1", "greet.txt:1: TOKEN-REVIEW: say hello, world instead", "+hi"} {
		if !strings.Contains(task, want) {
			t.Errorf("the follow-up's command has no %q:\n%s", want, task)
		}
	}
	if got := readFile(t, ws, "greet.txt"); got != "hello, world\n" {
		t.Errorf("greet.txt = %q", got)
	}
	if log := gitIn(t, ws, "log", "--format=%s", "-3"); log != "t1-review: Address the review of t1\nt1: Write greet.txt\nthe user's commit" {
		t.Errorf("history:\n%s", log)
	}
	out, _, _ = e.run("review", runID)
	if !strings.Contains(out, "(sent to t1-review)") {
		t.Errorf("review after resume:\n%s", out)
	}
	if _, stderr, code := e.run("resume", runID, "--workspace", ws); code != 2 || !strings.Contains(stderr, "nothing to resume") {
		t.Errorf("a second resume: exit %d\n%s", code, stderr)
	}
}

// The same review from the web page in headless Chromium: open the page of
// the finished run from the URL planagent ui printed, see t1's diff,
// comment on its line, send it; resume carries the follow-up out.
func TestE2EReviewInTheWebPage(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("browser end-to-end test: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	exe := chromium(t)
	plan := `{"title":"Greet","overview":"x","tasks":[{"id":"t1","title":"Write greet.txt","description":"TOKEN-GREET: write greet.txt","dependencies":[],"acceptance":["echo checked-greet && test -f greet.txt"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-WEB", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "greet.txt", "content": "hello from the review\n"})}},
		{token: "TOKEN-GREET", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "greet.txt", "content": "hi\n"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	if _, stderr, code := e.run("run", "--yes", "--workspace", ws, "greet"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	runID, _ := e.runState()

	addr := freeAddr(t)
	ui := e.command("ui", "--addr", addr)
	pipe, err := ui.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = ui.Process.Signal(os.Interrupt)
		_ = ui.Wait()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://\S+/\?token=[0-9a-f]+`).FindString(sc.Text()); m != "" {
				urls <- m
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatal("planagent ui printed no URL with a token")
	}
	base, token, _ := strings.Cut(url, "/?token=")

	// Without the token, or from another origin, nothing is written.
	for _, h := range []map[string]string{{"Origin": base}, {"Origin": "http://evil.example", "X-CodeAgent-Token": token}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/runs/"+runID+"/tasks/t1/comments", strings.NewReader(`{"file":"greet.txt","line":1,"text":"x"}`))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with %v: %d, want 403", h, resp.StatusCode)
		}
	}

	page := startBrowser(t, exe, url+"#"+runID)
	page.waitFor(`document.querySelector('#graph [data-task="t1"][data-status="completed"]')`)
	page.eval(`document.querySelector('#graph [data-task="t1"]').dispatchEvent(new MouseEvent("click"))`)
	dom := page.waitFor(`document.querySelector('#detail-diff .dl.add[data-file="greet.txt"][data-line="1"]')`)
	// Its acceptance output and summary are beside the diff.
	page.waitFor(`document.getElementById("detail-acceptance").textContent.includes("$ echo checked-greet && test -f greet.txt\nchecked-greet\n(exit 0)") && document.getElementById("detail-summary").textContent.length > 0`)
	if !strings.Contains(dom, `class="dl add"`) || !strings.Contains(dom, `class="dl hunk"`) {
		t.Errorf("the diff is not drawn line by line with its kinds:\n%s", dom)
	}
	page.eval(`document.querySelector('#detail-diff .dl.add[data-line="1"]').dispatchEvent(new MouseEvent("click"))`)
	page.waitFor(`document.querySelector('.comment-form textarea')`)
	page.eval(`document.querySelector('.comment-form textarea').value = "TOKEN-WEB: greet from the review"; document.querySelector('.comment-submit').click()`)
	page.waitFor(`document.querySelector('#review li[data-state="pending"]') && document.getElementById('review-send')`)
	page.eval(`document.getElementById('review-send').click()`)
	dom = page.waitFor(`document.querySelector('#review li[data-state="sent"]') && document.getElementById('review-msg-done').textContent.includes("planagent resume")`)
	if !strings.Contains(dom, "sent to t1-review") {
		t.Errorf("the page does not say where the comment went:\n%s", dom)
	}

	if out, stderr, code := e.run("resume", "--workspace", ws); code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if f.startCount("TOKEN-WEB") != 1 {
		t.Fatalf("the follow-up task was started %d times", f.startCount("TOKEN-WEB"))
	}
	if got := readFile(t, ws, "greet.txt"); got != "hello from the review\n" {
		t.Errorf("greet.txt = %q", got)
	}
	if log := gitIn(t, ws, "log", "--format=%s", "-2"); log != "t1-review: Address the review of t1\nt1: Write greet.txt" {
		t.Errorf("history:\n%s", log)
	}
}
