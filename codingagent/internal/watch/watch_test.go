package watch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// checkDone asserts that task id completed: report, workspace file, events
// file with task_start and task_end, claim files gone.
func checkDone(t *testing.T, l volume.Layout, id string, attempt int) {
	t.Helper()
	rep := waitReport(t, l, id, attempt)
	if rep.Status != protocol.StatusCompleted {
		t.Fatalf("report %s: status %s, error %q", id, rep.Status, rep.Error)
	}
	if rep.RunID != "r1" || rep.Summary != "Wrote "+id+".txt." || !strings.Contains(rep.Body, "Nothing else to do.") {
		t.Errorf("report %s: run %q summary %q body %q", id, rep.RunID, rep.Summary, rep.Body)
	}
	if len(rep.FilesChanged) != 1 || rep.FilesChanged[0] != id+".txt" {
		t.Errorf("report %s: files changed %v, want [%s.txt]", id, rep.FilesChanged, id)
	}
	if rep.Tokens.Prompt == 0 || rep.Duration <= 0 {
		t.Errorf("report %s: tokens %+v duration %s", id, rep.Tokens, rep.Duration)
	}
	got, err := os.ReadFile(filepath.Join(l.Workspace(), id+".txt"))
	if err != nil || string(got) != "hello from "+id+"\n" {
		t.Errorf("workspace file %s.txt = %q, %v", id, got, err)
	}
	types := eventTypes(t, l.EventsFile(id))
	for _, want := range []events.Type{events.TaskStart, events.ToolCall, events.ToolResult, events.TaskEnd} {
		if !types[want] {
			t.Errorf("events file of %s has no %s event (has %v)", id, want, types)
		}
	}
	eventually(t, "claim of "+id+" removed", func() bool {
		return !exists(filepath.Join(l.Claimed(), id+".md")) && !exists(filepath.Join(l.Claimed(), id+".owner.json"))
	})
}

func eventTypes(t *testing.T, path string) map[events.Type]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("events file: %v", err)
	}
	defer f.Close()
	seen := make(map[events.Type]bool)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("events file %s: line %q: %v", path, sc.Text(), err)
		}
		seen[e.Type] = true
	}
	return seen
}

func TestCommandsInReportsOut(t *testing.T) {
	t.Parallel() // own layout, server and watcher; most of it is waiting
	tests := []struct {
		name        string
		ids         []string
		concurrency int
		poll        time.Duration
	}{
		{name: "one command", ids: []string{"t1"}},
		{name: "two in quick succession", ids: []string{"t1", "t2"}},
		{name: "two at once with concurrency 2", ids: []string{"t1", "t2"}, concurrency: 2},
		{name: "poll mode", ids: []string{"t1", "t2"}, poll: 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			srv := llmtest.New(t)
			model := newScriptedModel()
			srv.Handle(model.handle)
			startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), Concurrency: tt.concurrency, Poll: tt.poll})
			// Wait until the watcher is up, so the commands arrive as events
			// (the start-up scan is tested separately).
			eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
			for _, id := range tt.ids {
				dropCommand(t, l, command(id, 1))
			}
			for _, id := range tt.ids {
				checkDone(t, l, id, 1)
				if n := model.starts(id); n != 1 {
					t.Errorf("task %s started %d times, want 1", id, n)
				}
			}
			if r := srv.Rejections(); len(r) > 0 {
				t.Errorf("the model server rejected requests: %v", r)
			}
		})
	}
}

func mustHeartbeats(t *testing.T, l volume.Layout) []protocol.Heartbeat {
	t.Helper()
	hbs, err := protocol.ReadHeartbeats(l.Watchers())
	if err != nil {
		t.Fatal(err)
	}
	return hbs
}

// A watcher that starts after a crash finds a pending command and a claim
// whose watcher is gone; both are carried out, the claimed one as attempt 2.
func TestRestartRecoversPendingAndClaimed(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	model := newScriptedModel()
	srv.Handle(model.handle)

	dropCommand(t, l, command("pending", 1))
	claimed := command("inflight", 1)
	if err := protocol.WriteCommand(filepath.Join(l.Claimed(), "inflight.md"), claimed); err != nil {
		t.Fatal(err)
	}
	owner := fmt.Sprintf(`{"watcher":"w-dead","pid":1,"host":"gone","claimed_at":%q}`, time.Now().Add(-time.Minute).Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(l.Claimed(), "inflight.owner.json"), []byte(owner), 0o644); err != nil {
		t.Fatal(err)
	}
	startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), WatcherID: "w-new"})

	checkDone(t, l, "pending", 1)
	checkDone(t, l, "inflight", 2)
	for _, id := range []string{"pending", "inflight"} {
		if n := model.starts(id); n != 1 {
			t.Errorf("task %s started %d times, want 1", id, n)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(l.Claimed(), "*")); len(leftovers) > 0 {
		t.Errorf("claims left behind: %v", leftovers)
	}
}

// Claims are retaken only when their owner is dead, and given up on after
// MaxAttempts; a claim whose report was already written is just removed.
func TestRecoverClaims(t *testing.T) {
	tests := []struct {
		name        string
		attempt     int
		owner       string // "" = no owner file
		beat        time.Duration
		report      bool // the report of this attempt exists already
		wantRequeue int  // attempt of the command put back; 0 = none
		wantReport  string
		wantClaim   bool
	}{
		{name: "dead owner without heartbeat", attempt: 1, owner: "w-dead", wantRequeue: 2},
		{name: "owner with a stale heartbeat", attempt: 2, owner: "w-old", beat: -time.Minute, wantRequeue: 3},
		{name: "owner alive", attempt: 1, owner: "w-alive", beat: 0, wantClaim: true},
		{name: "attempts used up", attempt: 3, owner: "w-dead", wantReport: "abandoned after 3 attempts: the watchers running it died"},
		{name: "report already written", attempt: 1, owner: "w-dead", report: true},
		{name: "ownerless claim is given time", attempt: 1, wantClaim: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			if err := protocol.WriteCommand(filepath.Join(l.Claimed(), "c1.md"), command("c1", tt.attempt)); err != nil {
				t.Fatal(err)
			}
			if tt.owner != "" {
				data, _ := json.Marshal(Owner{Watcher: tt.owner})
				if err := os.WriteFile(filepath.Join(l.Claimed(), "c1.owner.json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.owner == "w-alive" || tt.owner == "w-old" {
				if err := protocol.WriteHeartbeat(l.Watchers(), protocol.Heartbeat{ID: tt.owner, Updated: time.Now().Add(tt.beat)}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.report {
				if err := protocol.WriteReport(l.ReportFile("c1"), &protocol.Report{ID: "c1", RunID: "r1", Attempt: tt.attempt, Status: protocol.StatusCompleted}); err != nil {
					t.Fatal(err)
				}
			}
			opts, err := Options{Layout: l, Runner: noopRunner{}, WatcherID: "w-me", Logger: testLogger(t)}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			w := &watcher{opts: opts, log: opts.Logger, inflight: map[string]struct{}{}, ownerless: map[string]time.Time{}}
			w.recoverClaims()

			cmd, err := protocol.ReadCommand(l.CommandFile("c1"))
			switch {
			case tt.wantRequeue == 0 && err == nil:
				t.Errorf("command put back with attempt %d, want none", cmd.Attempt)
			case tt.wantRequeue != 0 && err != nil:
				t.Errorf("command not put back: %v", err)
			case tt.wantRequeue != 0 && cmd.Attempt != tt.wantRequeue:
				t.Errorf("command put back with attempt %d, want %d", cmd.Attempt, tt.wantRequeue)
			}
			if tt.wantReport != "" {
				rep, err := protocol.ReadReport(l.ReportFile("c1"))
				if err != nil || rep.Status != protocol.StatusFailed || rep.Error != tt.wantReport || rep.Attempt != tt.attempt {
					t.Errorf("report = %+v, %v; want failed %q", rep, err, tt.wantReport)
				}
			}
			if got := exists(filepath.Join(l.Claimed(), "c1.md")); got != tt.wantClaim {
				t.Errorf("claim still there = %v, want %v", got, tt.wantClaim)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(l.Claimed(), "*retake*")); len(leftovers) > 0 {
				t.Errorf("retake files left behind: %v", leftovers)
			}
		})
	}
}

// A watcher killed with -9 leaves a heartbeat that is fresh for a while: a
// new watcher leaves its claim alone until the heartbeat is StaleAfter old,
// then runs the command again as the next attempt.
func TestRetakeWhenTheOwnersHeartbeatGoesStale(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	if err := protocol.WriteCommand(filepath.Join(l.Claimed(), "c1.md"), command("c1", 1)); err != nil {
		t.Fatal(err)
	}
	owner, _ := json.Marshal(Owner{Watcher: "w-killed", PID: 1, Host: "h", ClaimedAt: time.Now()})
	if err := os.WriteFile(filepath.Join(l.Claimed(), "c1.owner.json"), owner, 0o644); err != nil {
		t.Fatal(err)
	}
	lastBeat := time.Now()
	if err := protocol.WriteHeartbeat(l.Watchers(), protocol.Heartbeat{ID: "w-killed", PID: 1, Host: "h", Started: lastBeat, Updated: lastBeat}); err != nil {
		t.Fatal(err)
	}
	const staleAfter = 400 * time.Millisecond
	ran := make(chan string, 1)
	startWatcher(t, Options{Layout: l, Runner: noopRunner{ran: ran}, WatcherID: "w-new", StaleAfter: staleAfter, Reconcile: 20 * time.Millisecond})
	select {
	case id := <-ran:
		if waited := time.Since(lastBeat); id != "c1" || waited < staleAfter {
			t.Errorf("ran %s %s after the owner's last heartbeat, want c1 after at least %s", id, waited, staleAfter)
		}
	case <-time.After(testWait):
		t.Fatal("the claim of the killed watcher was never retaken")
	}
	if rep := waitReport(t, l, "c1", 2); rep.Status != protocol.StatusCompleted {
		t.Errorf("report: %s %q", rep.Status, rep.Error)
	}
}
