package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// noopRunner completes every command at once; ran (optional) learns when.
type noopRunner struct{ ran chan<- string }

func (r noopRunner) Run(ctx context.Context, cmd *protocol.Command, _ string, _ events.Sink) (*protocol.Report, error) {
	if r.ran != nil {
		r.ran <- cmd.ID
	}
	return &protocol.Report{Status: protocol.StatusCompleted, Body: "done"}, nil
}

func TestTwoWatchersRunEachCommandOnce(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	model := newScriptedModel()
	srv.Handle(model.handle)
	runner := agentRunner(t, l, srv)
	startWatcher(t, Options{Layout: l, Runner: runner, WatcherID: "w-a", Concurrency: 2})
	startWatcher(t, Options{Layout: l, Runner: runner, WatcherID: "w-b", Concurrency: 2})
	eventually(t, "both heartbeats", func() bool { return len(mustHeartbeats(t, l)) == 2 })

	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("t%02d", i)
		ids = append(ids, id)
		dropCommand(t, l, command(id, 1))
	}
	for _, id := range ids {
		checkDone(t, l, id, 1)
	}
	for _, id := range ids {
		if n := model.starts(id); n != 1 {
			t.Errorf("task %s started %d times, want exactly 1", id, n)
		}
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Errorf("the model server rejected requests: %v", r)
	}
}

// A broken command becomes a failed report that says what is wrong, and
// the watcher goes on with the next command.
func TestBrokenCommandsAreReported(t *testing.T) {
	t.Parallel() // own layout, server and watcher; most of it is waiting
	tests := []struct {
		name    string
		file    string
		content string
		want    []string // substrings of the report's error
		wantRun string
	}{
		{name: "garbage", file: "g1.md", content: "\x00\x01 this is not a command",
			want: []string{"commands/g1.md", "front matter"}, wantRun: unknownRun},
		{name: "half written", file: "g2.md", content: "---\nid: g2\nrun_id: r7\nattempt: 1\ntitle: half",
			want: []string{"commands/g2.md"}, wantRun: unknownRun},
		{name: "invalid field", file: "g3.md", content: "---\nid: g3\nrun_id: r7\nattempt: 0\ntitle: x\n---\n\nbody\n",
			want: []string{"commands/g3.md", `field "attempt"`, "must be >= 1"}, wantRun: "r7"},
		{name: "unknown field", file: "g4.md", content: "---\nid: g4\nrun_id: r7\nattempt: 2\ntitle: x\npriority: high\n---\n\nbody\n",
			want: []string{"commands/g4.md", "priority"}, wantRun: "r7"},
		{name: "id does not match the file name", file: "g5.md", content: "---\nid: other\nrun_id: r7\nattempt: 1\ntitle: x\n---\n\nbody\n",
			want: []string{"commands/g5.md", `field "id"`, "does not match the file name"}, wantRun: "r7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			ran := make(chan string, 10)
			startWatcher(t, Options{Layout: l, Runner: noopRunner{ran: ran}})
			eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
			if err := protocol.WriteFileAtomic(filepath.Join(l.Commands(), tt.file), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSuffix(tt.file, ".md")
			rep := waitReport(t, l, id, reportAttempt(tt.content))
			if rep.Status != protocol.StatusFailed || rep.RunID != tt.wantRun {
				t.Errorf("report: status %s run %q, want failed %q", rep.Status, rep.RunID, tt.wantRun)
			}
			for _, want := range tt.want {
				if !strings.Contains(rep.Error, want) {
					t.Errorf("report error %q does not mention %q", rep.Error, want)
				}
			}
			dropCommand(t, l, command("next", 1))
			if got := waitReport(t, l, "next", 1); got.Status != protocol.StatusCompleted {
				t.Errorf("the command after the broken one: %s %s", got.Status, got.Error)
			}
			if got := <-ran; got != "next" {
				t.Errorf("runner ran %q, want only next", got)
			}
		})
	}
}

// reportAttempt is the attempt the watcher can read from a broken file.
func reportAttempt(content string) int {
	if strings.Contains(content, "\n---\n") && strings.Contains(content, "attempt: 2") {
		return 2
	}
	return 1
}

func TestInvalidFileNameIsSetAside(t *testing.T) {
	l := newLayout(t)
	startWatcher(t, Options{Layout: l, Runner: noopRunner{}})
	eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
	if err := os.WriteFile(filepath.Join(l.Commands(), "bad name.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bad name.md set aside", func() bool {
		return exists(filepath.Join(l.Claimed(), "bad name.md.invalid")) && !exists(filepath.Join(l.Commands(), "bad name.md"))
	})
	dropCommand(t, l, command("after", 1))
	waitReport(t, l, "after", 1)
}

// On shutdown a running task gets the grace period; a task that does not
// finish in it is interrupted, reported as such, and Run returns nil.
func TestShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		delay      time.Duration // the model's delay before its first answer
		grace      time.Duration
		wantStatus protocol.Status
	}{
		{name: "task outlives the grace period", delay: time.Minute, grace: 300 * time.Millisecond, wantStatus: protocol.StatusInterrupted},
		{name: "task finishes within the grace period", delay: 300 * time.Millisecond, grace: testWait, wantStatus: protocol.StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits out its grace or delay, on its own layout and server
			l := newLayout(t)
			srv := llmtest.New(t)
			model := newScriptedModel()
			model.delay = tt.delay
			asked := make(chan string, 1)
			model.onStart = func(id string) { asked <- id }
			srv.Handle(model.handle)
			w := startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), Grace: tt.grace})
			dropCommand(t, l, command("long", 1))
			select {
			case <-asked:
			case <-time.After(testWait):
				t.Fatal("the task never reached the model")
			}
			eventually(t, "the heartbeat to list the running task", func() bool {
				hbs := mustHeartbeats(t, l)
				return len(hbs) == 1 && len(hbs[0].Running) == 1 && hbs[0].Running[0] == "long"
			})
			err, took := w.stop(t)
			if err != nil {
				t.Fatalf("Run returned %v, want nil after a graceful stop", err)
			}
			if tt.wantStatus == protocol.StatusInterrupted && took > tt.grace+5*time.Second {
				t.Errorf("Run took %s to return, grace was %s", took, tt.grace)
			}
			rep, err := protocol.ReadReport(l.ReportFile("long"))
			if err != nil {
				t.Fatalf("no report after shutdown: %v", err)
			}
			if rep.Status != tt.wantStatus {
				t.Errorf("report status %s (%s), want %s", rep.Status, rep.Error, tt.wantStatus)
			}
			if exists(filepath.Join(l.Claimed(), "long.md")) || exists(l.CommandFile("long")) {
				t.Error("the claim or the command is still there after the report")
			}
			if hbs := mustHeartbeats(t, l); len(hbs) != 0 {
				t.Errorf("heartbeat left after a graceful stop: %+v", hbs)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	tests := []struct {
		name        string
		cmdTimeout  time.Duration
		taskTimeout time.Duration
		want        string
	}{
		{name: "the command's timeout", cmdTimeout: 300 * time.Millisecond, want: "timed out after 300ms"},
		{name: "the watcher's default", taskTimeout: 400 * time.Millisecond, want: "timed out after 400ms"},
		{name: "the command's wins", cmdTimeout: 300 * time.Millisecond, taskTimeout: time.Hour, want: "timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newLayout(t)
			srv := llmtest.New(t)
			model := newScriptedModel()
			model.delay = time.Minute
			srv.Handle(model.handle)
			startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), TaskTimeout: tt.taskTimeout})
			cmd := command("slow", 1)
			cmd.Timeout = protocol.Duration(tt.cmdTimeout)
			dropCommand(t, l, cmd)
			rep := waitReport(t, l, "slow", 1)
			if rep.Status != protocol.StatusFailed || !strings.HasPrefix(rep.Error, tt.want) {
				t.Errorf("report: %s %q, want failed %q", rep.Status, rep.Error, tt.want)
			}
		})
	}
}

type panicRunner struct{}

func (panicRunner) Run(_ context.Context, cmd *protocol.Command, _ string, _ events.Sink) (*protocol.Report, error) {
	if cmd.ID == "boom" {
		panic("runner bug")
	}
	return &protocol.Report{Status: protocol.StatusCompleted, Body: "fine"}, nil
}

func TestRunnerPanicFailsOnlyItsTask(t *testing.T) {
	l := newLayout(t)
	startWatcher(t, Options{Layout: l, Runner: panicRunner{}})
	dropCommand(t, l, command("boom", 1))
	dropCommand(t, l, command("fine", 1))
	if rep := waitReport(t, l, "boom", 1); rep.Status != protocol.StatusFailed || !strings.Contains(rep.Error, "runner bug") {
		t.Errorf("boom: %s %q", rep.Status, rep.Error)
	}
	if rep := waitReport(t, l, "fine", 1); rep.Status != protocol.StatusCompleted {
		t.Errorf("fine: %s %q", rep.Status, rep.Error)
	}
}
