//go:build e2e

package main

// End-to-end tests of the run's views: `status --json`, `runs --json`,
// `graph` in its three formats and the summary's pictures, over a real run.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/poll"
)

// statusJSON is the part of `status --json` the tests read.
type statusJSON struct {
	ID     string         `json:"id"`
	Status string         `json:"status"`
	Counts map[string]int `json:"counts"`
	Tokens struct {
		Total int `json:"total"`
	} `json:"tokens"`
	CostUSD *float64 `json:"cost_usd"`
	Paused  string   `json:"paused"`
	Budget  *struct {
		Tokens int `json:"tokens"`
	} `json:"budget"`
	Tasks []struct {
		ID           string   `json:"id"`
		Status       string   `json:"status"`
		Attempts     int      `json:"attempts"`
		Dependencies []string `json:"dependencies"`
		Tokens       struct {
			Prompt, Completion, Total int
		} `json:"tokens"`
		CostUSD  *float64 `json:"cost_usd"`
		Started  string   `json:"started"`
		Ended    string   `json:"ended"`
		Timeline []struct {
			Attempt int    `json:"attempt"`
			Status  string `json:"status"`
		} `json:"timeline"`
	} `json:"tasks"`
}

func decodeJSON(t *testing.T, what, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", what, err, out)
	}
}

func TestE2EViewStatusRunsGraph(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	if out, stderr, code := e.run("run", "--yes", "write greeting files"); code != 0 {
		t.Fatalf("run exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}

	out, stderr, code := e.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json exit %d: %s", code, stderr)
	}
	var st statusJSON
	decodeJSON(t, "status --json", out, &st)
	if st.Status != "completed" || st.Counts["completed"] != 3 || len(st.Tasks) != 3 || st.Tokens.Total == 0 || st.CostUSD != nil {
		t.Errorf("status --json: %+v", st)
	}
	deps := map[string]string{}
	for _, task := range st.Tasks {
		deps[task.ID] = strings.Join(task.Dependencies, ",")
		if task.Status != "completed" || task.Attempts != 1 || task.Tokens.Total == 0 || task.Started == "" || task.Ended == "" ||
			len(task.Timeline) != 1 || task.Timeline[0].Status != "completed" {
			t.Errorf("task %s: %+v", task.ID, task)
		}
	}
	if deps["beta"] != "alpha" || deps["alpha"] != "" {
		t.Errorf("dependencies %v", deps)
	}

	out, stderr, code = e.run("runs", "--json")
	if code != 0 {
		t.Fatalf("runs --json exit %d: %s", code, stderr)
	}
	var rows []struct {
		ID, Goal, Status string
		Tokens           struct{ Total int }
	}
	decodeJSON(t, "runs --json", out, &rows)
	if len(rows) != 1 || rows[0].ID != st.ID || rows[0].Goal != "write greeting files" || rows[0].Status != "completed" || rows[0].Tokens.Total != st.Tokens.Total {
		t.Errorf("runs --json: %+v", rows)
	}
	if out, _, code := e.run("runs"); code != 0 || !strings.Contains(out, st.ID) || !strings.Contains(out, "3/3") {
		t.Errorf("runs exit %d:\n%s", code, out)
	}

	out, _, code = e.run("graph", st.ID, "--format", "json")
	var g struct {
		Nodes []struct{ ID, Status string }
		Edges []struct{ From, To string }
	}
	decodeJSON(t, "graph --format json", out, &g)
	if code != 0 || len(g.Nodes) != 3 || len(g.Edges) != 1 || g.Edges[0].From != "alpha" || g.Edges[0].To != "beta" {
		t.Errorf("graph json exit %d: %+v", code, g)
	}
	out, _, code = e.run("graph", "--format", "mermaid")
	if code != 0 || !strings.HasPrefix(out, "flowchart TD\n") || strings.Count(out, ":::completed") != 3 || !strings.Contains(out, "-->") {
		t.Errorf("graph mermaid exit %d:\n%s", code, out)
	}
	if _, stderr, code := e.run("graph", "--format", "png"); code != 2 || !strings.Contains(stderr, "mermaid, dot or json") {
		t.Errorf("graph --format png: exit %d: %s", code, stderr)
	}
	dot, _, code := e.run("graph", "--format", "dot")
	if code != 0 || !strings.Contains(dot, `"alpha" -> "beta";`) {
		t.Errorf("graph dot exit %d:\n%s", code, dot)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Log("graphviz's dot is not installed: the dot output was not rendered (.ci/run installs graphviz)")
	} else {
		cmd := exec.Command("dot", "-Tsvg")
		cmd.Stdin = strings.NewReader(dot)
		var svg, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &svg, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("dot -Tsvg: %v: %s", err, errb.String())
		}
		if n := strings.Count(svg.String(), `class="node"`); n != 3 {
			t.Errorf("the svg has %d nodes, want 3", n)
		}
	}

	sum := e.read("reports/summary.md")
	for _, want := range []string{"```mermaid\nflowchart TD", ":::completed", "## Timeline", "| alpha | 1 | +", "gantt"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}
}

// chromium finds Debian's headless browser; its absence fails the test
// (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("CODEAGENT_E2E=1 needs a headless Chromium: apt-get install -y chromium")
	return ""
}

// browser is a headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4).
// --dump-dom is not enough: with --virtual-time-budget it waits for the
// network to go idle, which a live page's event stream never does.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File // chromium's fd 3
	out     *bufio.Reader
	id      int
	session string
}

func startBrowser(t *testing.T, exe, url string) *browser {
	t.Helper()
	r3, w3, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r4, w4, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{r3, w4}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	r3.Close()
	w4.Close()
	b := &browser{t: t, cmd: cmd, in: w3, out: bufio.NewReader(r4)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		w3.Close()
		r4.Close()
		if t.Failed() {
			t.Logf("chromium's stderr (tail):\n%s", tailOf(errb.String(), 3000))
		}
	})
	target := b.call("Target.createTarget", map[string]any{"url": url})
	var created struct{ TargetID string }
	b.decode(target, &created)
	attached := b.call("Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true})
	var session struct{ SessionID string }
	b.decode(attached, &session)
	b.session = session.SessionID
	return b
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// call sends one command and returns its result, skipping the events in between.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	res, err := b.try(method, params)
	if err != nil {
		b.t.Fatalf("chromium %s: %v", method, err)
	}
	return res
}

// screenshot writes the page's top, at a 1280x900 window, as a PNG to path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false})
	var shot struct {
		Data []byte `json:"data"` // base64 in the JSON: encoding/json decodes it
	}
	b.decode(b.call("Page.captureScreenshot", map[string]any{"format": "png",
		// The page's top, the run's title, graph and timeline, wherever it is
		// scrolled to (a click on a task scrolls its detail into view).
		"captureBeyondViewport": true, "clip": map[string]any{"x": 0, "y": 0, "width": 1280, "height": 900, "scale": 1}}), &shot)
	if len(shot.Data) == 0 {
		b.t.Fatal("chromium: an empty screenshot")
	}
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// try is call returning the browser's error.
func (b *browser) try(method string, params any) (json.RawMessage, error) {
	b.t.Helper()
	b.id++
	msg := map[string]any{"id": b.id, "method": method, "params": params}
	if b.session != "" {
		msg["sessionId"] = b.session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		b.t.Fatalf("chromium %s: %v", method, err)
	}
	for {
		line, err := b.out.ReadBytes(0)
		if err != nil {
			return nil, fmt.Errorf("no answer: %w", err)
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &resp); err != nil || resp.ID != b.id {
			continue
		}
		if resp.Error != nil {
			return nil, errors.New(resp.Error.Message)
		}
		return resp.Result, nil
	}
}

func (b *browser) decode(raw json.RawMessage, v any) {
	b.t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		b.t.Fatalf("chromium answer %s: %v", raw, err)
	}
}

// waitFor waits until the page makes cond (a JS expression) true, watching
// the DOM's mutations, and returns the page's HTML then. The page gets 30 s.
func (b *browser) waitFor(cond string) string {
	b.t.Helper()
	expr := `new Promise((resolve, reject) => {
  const ok = () => { try { return !!(` + cond + `); } catch (e) { return false; } };
  const done = () => resolve(document.documentElement.outerHTML);
  if (ok()) return done();
  const o = new MutationObserver(() => { if (ok()) { o.disconnect(); done(); } });
  o.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  setTimeout(() => { o.disconnect(); reject(new Error("timed out; page: " + document.body.innerText.slice(0, 2000))); }, 30000);
})`
	// A page still loading (or navigating) has no context to run in yet.
	var res json.RawMessage
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		res, err = b.try("Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "context") || time.Now().After(deadline) {
			b.t.Fatalf("chromium: evaluate %s: %v", cond, err)
		}
	}
	var out struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.decode(res, &out)
	if out.ExceptionDetails != nil {
		b.t.Fatalf("the page never showed %s: %s", cond, out.ExceptionDetails.Exception.Description)
	}
	html, _ := out.Result.Value.(string)
	return html
}

// eval runs a JS expression in the page.
func (b *browser) eval(expr string) {
	b.t.Helper()
	b.call("Runtime.evaluate", map[string]any{"expression": expr})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The web page in a real browser during a live run: the graph shows the
// finished task completed and the running one in progress.
func TestE2EViewWebPageLive(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("browser end-to-end test: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	exe := chromium(t)
	tasks := threeTasks()
	// beta runs long enough to be looked at, and gamma after it, so the page
	// must follow beta's end over its live stream.
	tasks[1].delay = 6 * time.Second
	tasks[2].delay = 6 * time.Second
	// A chain, so the order is known whatever the parallelism.
	chain := strings.Replace(threeTaskPlan, `"TOKEN-GAMMA: write notes.md","dependencies":[]`, `"TOKEN-GAMMA: write notes.md","dependencies":["beta"]`, 1)
	if chain == threeTaskPlan {
		t.Fatal("threeTaskPlan changed: make gamma depend on beta here again")
	}
	f := &fakeModel{plan: chain, tasks: tasks, started: make(chan string, 10)}
	e := newRunEnv(t, f)
	addr := freeAddr(t)
	cmd := e.command("run", "--yes", "--ui", "--ui-addr", addr, "write greeting files")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			_ = cmd.Process.Kill()
			<-waited
			t.Logf("planagent run's stderr:\n%s", errb.String())
		}
	})
	deadline := time.After(60 * time.Second)
	for started := false; !started; {
		select {
		case tok := <-f.started:
			started = tok == "TOKEN-BETA"
		case err := <-waited:
			t.Fatalf("the run ended before beta started: %v\n%s", err, errb.String())
		case <-deadline:
			t.Fatalf("beta did not start within 60s\n%s", errb.String())
		}
	}

	page := startBrowser(t, exe, "http://"+addr+"/")
	dom := page.waitFor(`document.querySelector('#graph [data-task="beta"][data-status="in_progress"]') && document.querySelector('#timeline .bar')`)
	for _, want := range []string{
		`data-task="alpha" data-status="completed"`,
		`data-task="beta" data-status="in_progress"`,
		`class="node st-completed"`,
		"write greeting files",
		`<td class="status st-completed">completed</td>`,
		`class="bar st-completed"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s\n%s", want, dom)
		}
	}

	// Without a reload, the page follows the run: beta completes, its
	// events came in as it ran, and its report is one click away.
	page.waitFor(`document.querySelector('#graph [data-task="beta"][data-status="completed"]') && document.querySelector('#tasks tr[data-task="beta"][data-status="completed"]') &&
		document.querySelector('#graph [data-task="gamma"][data-status="in_progress"]')`)
	dom = page.waitFor(`[...document.querySelectorAll('#events li[data-task="beta"]')].some(li => li.textContent.includes("write_file"))`)
	if !strings.Contains(dom, "shell_exec") {
		t.Errorf("beta's events lack its shell_exec call:\n%s", dom)
	}
	page.eval(`document.querySelector('#graph [data-task="alpha"]').dispatchEvent(new MouseEvent("click"))`)
	page.waitFor(`document.getElementById("detail-report").textContent.includes("status: completed") && document.getElementById("detail-files").textContent.includes("hello.txt")`)
	// The run keeps checkpoints (a shadow repository for this plain
	// directory): alpha's diff is its commit.
	page.waitFor(`document.getElementById("detail-diff").textContent.includes("+++ b/hello.txt") && document.getElementById("detail-diff").textContent.includes("+hello")`)
	// make screenshot: the README's picture is this page, mid-run, taken
	// here so it shows what the view really draws.
	if path := os.Getenv("CODEAGENT_SCREENSHOT"); path != "" {
		page.screenshot(path)
	}

	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, errb.String())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the run did not end\n%s", errb.String())
	}
	// The page that followed the run shows its end without a reload: the
	// final "completed" reached it before the server stopped, and it no
	// longer says "live".
	page.waitFor(`document.querySelector('#graph [data-task="gamma"][data-status="completed"]') &&
		document.getElementById("run-title").textContent.endsWith(": completed") &&
		document.getElementById("conn").textContent === "run completed (ended)"`)
	if !strings.Contains(errb.String(), "web view: http://"+addr+"/?token=") || !strings.Contains(errb.String(), "#run-") {
		t.Errorf("run --ui did not say where the page is:\n%s", errb.String())
	}

	// planagent ui serves the finished run the same way.
	addr = freeAddr(t)
	ui := e.command("ui", "--addr", addr)
	var uiErr bytes.Buffer
	ui.Stderr = &uiErr
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = ui.Process.Signal(os.Interrupt)
		_ = ui.Wait()
	}()
	listening := poll.Wait(t.Context(), 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !listening {
		t.Fatalf("planagent ui does not listen on %s:\n%s", addr, uiErr.String())
	}
	dom = startBrowser(t, exe, "http://"+addr+"/").waitFor(`document.querySelectorAll('[data-status="completed"]').length >= 6`)
	if !strings.Contains(dom, "completed") || !strings.Contains(dom, "write greeting files") {
		t.Errorf("planagent ui's page:\n%s", dom)
	}
}
