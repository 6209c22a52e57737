package runrecord

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// transition runs task id through one dispatch and completion on st, as the
// orchestrator does, recording each.
func transition(t testing.TB, l volume.Layout, st *State, g *taskgraph.Graph, id string, now time.Time) {
	t.Helper()
	if err := g.Start(id); err != nil {
		t.Fatal(err)
	}
	task, _ := g.Get(id)
	st.Info[id].Attempt = task.Attempts
	st.Info[id].DispatchedAt = now
	if err := st.Record(l, now, task); err != nil {
		t.Fatal(err)
	}
	if err := g.Complete(id, "done "+id); err != nil {
		t.Fatal(err)
	}
	task, _ = g.Get(id)
	st.Info[id].Summary = "summary of " + id
	st.Info[id].Tokens.Prompt += 10
	st.Usage.Prompt++
	if err := st.Record(l, now, task); err != nil {
		t.Fatal(err)
	}
}

func startedState(t testing.TB, n int) (volume.Layout, *State, *taskgraph.Graph) {
	t.Helper()
	l := newLayout(t)
	st := newTestState(t, chain(n)...)
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	g, err := taskgraph.New(st.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	return l, st, g
}

// comparable is the persisted part of a state, for comparisons.
func comparable(t testing.TB, st *State) string {
	t.Helper()
	c := *st
	c.Updated, c.JournalSeq, c.j = time.Time{}, 0, nil
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJournalReplaysToTheSameState(t *testing.T) {
	l, st, g := startedState(t, 5)
	now := time.Now().UTC().Round(time.Millisecond)
	transition(t, l, st, g, benchID(0), now)
	transition(t, l, st, g, benchID(1), now)
	st.Decisions = append(st.Decisions, Decision{Time: now, Task: benchID(1), Action: "continue", Reason: "fine"})
	if err := st.Record(l, now); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if comparable(t, got) != comparable(t, st) {
		t.Errorf("replayed state differs:\n got %s\nwant %s", comparable(t, got), comparable(t, st))
	}
	// The snapshot was written once (at the start); the rest is in the journal.
	var snap State
	b, _ := os.ReadFile(statePath(l, st.RunID))
	if err := json.Unmarshal(b, &snap); err != nil || snap.Tasks[0].Status != taskgraph.Pending {
		t.Errorf("state.json was rewritten per transition (%v)", err)
	}
	// A resumed writer continues the sequence; a second replay agrees.
	g2, _ := taskgraph.New(got.Tasks)
	transition(t, l, got, g2, benchID(2), now)
	if err := got.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if comparable(t, again) != comparable(t, got) || len(again.Decisions) != 1 {
		t.Errorf("after resume: got %s\nwant %s", comparable(t, again), comparable(t, got))
	}
}

func TestJournalTornLastRecord(t *testing.T) {
	l, st, g := startedState(t, 4)
	now := time.Now().UTC().Round(time.Millisecond)
	transition(t, l, st, g, benchID(0), now)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	want := comparable(t, st)
	file := journalPath(l, st.RunID)
	good, _ := os.ReadFile(file)
	for name, torn := range map[string]string{
		"no newline":           `{"seq":3,"status":"running","tasks":[{"task":{"id":"t00001","sta`,
		"newline, bad json":    "{\"seq\":3,\"status\":\"runn\x00\x00\x00\n",
		"zeros of a lost page": strings.Repeat("\x00", 100),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, append(append([]byte(nil), good...), torn...), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadState(l, st.RunID, false)
			if err != nil {
				t.Fatalf("a torn last record is not an error: %v", err)
			}
			if comparable(t, got) != want {
				t.Errorf("state with a torn record:\n got %s\nwant %s", comparable(t, got), want)
			}
			// The next record cuts the torn tail off before appending.
			g2, _ := taskgraph.New(got.Tasks)
			transition(t, l, got, g2, benchID(1), now)
			if err := got.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := LoadState(l, st.RunID, false)
			if err != nil {
				t.Fatal(err)
			}
			if comparable(t, again) != comparable(t, got) {
				t.Errorf("after appending past a torn record:\n got %s\nwant %s", comparable(t, again), comparable(t, got))
			}
			data, _ := os.ReadFile(file)
			if strings.Contains(string(data), "sta\n") || strings.ContainsRune(string(data), 0) {
				t.Errorf("the torn tail is still in the journal:\n%q", data)
			}
		})
	}
}

func TestJournalCorruptMiddleRecordIsAnError(t *testing.T) {
	l, st, g := startedState(t, 3)
	transition(t, l, st, g, benchID(0), time.Now())
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	file := journalPath(l, st.RunID)
	data, _ := os.ReadFile(file)
	lines := strings.SplitAfter(string(data), "\n")
	bad := lines[0][:1] + "!!!" + lines[0][1:] + strings.Join(lines[1:], "")
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadState(l, st.RunID, false)
	if err == nil || !strings.Contains(err.Error(), "line 1 is corrupt") || !strings.Contains(err.Error(), file) {
		t.Errorf("err = %v, want the journal and line 1 named", err)
	}
}

func TestJournalSnapshotThenCrashBeforeEmptying(t *testing.T) {
	// A crash after the snapshot's rename but before the journal is
	// emptied leaves records the snapshot already has: they are skipped.
	l, st, g := startedState(t, 3)
	now := time.Now().UTC().Round(time.Millisecond)
	transition(t, l, st, g, benchID(0), now)
	st.Decisions = append(st.Decisions, Decision{Time: now, Task: benchID(0), Action: "continue"})
	if err := st.Record(l, now); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(journalPath(l, st.RunID))
	st.Tasks = g.Tasks()
	if err := st.Save(l, now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journalPath(l, st.RunID), old, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Decisions) != 1 || comparable(t, got) != comparable(t, st) {
		t.Errorf("records replayed twice: %d decisions\n got %s\nwant %s", len(got.Decisions), comparable(t, got), comparable(t, st))
	}
}

func TestJournalCompacts(t *testing.T) {
	n := compactEvery(10) + 5 // records: two per task
	l, st, g := startedState(t, n)
	now := time.Now()
	for i := range n {
		transition(t, l, st, g, benchID(i), now)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(journalPath(l, st.RunID))
	if err != nil {
		t.Fatal(err)
	}
	var snap State
	b, _ := os.ReadFile(statePath(l, st.RunID))
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.JournalSeq == 0 || fi.Size() > int64(compactEvery(n))*2000 {
		t.Errorf("no compaction: snapshot at record %d, journal %d bytes", snap.JournalSeq, fi.Size())
	}
	got, err := LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if comparable(t, got) != comparable(t, st) {
		t.Errorf("after compaction the replay differs")
	}
}

// TestJournalKill9 kills a process recording transitions at random points
// (SIGKILL: no deferred code, no flush) and checks that the state loaded
// afterwards holds everything acknowledged: every task the writer said it
// completed is completed with its info, what it did after is a consistent
// prefix (completed tasks in order, then at most one in progress), and a
// resumed writer carries on from there.
func TestJournalKill9(t *testing.T) {
	if os.Getenv("JOURNAL_WRITER") != "" {
		journalWriter(t)
		return
	}
	if testing.Short() {
		t.Skip("kill -9 of a subprocess writing 1 000 transitions, three rounds: not in -short")
	}
	for round := range 3 {
		vols := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestJournalKill9$")
		cmd.Env = append(os.Environ(), "JOURNAL_WRITER="+vols)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		acked := -1
		stopAt := []int{40, 300, 600}[round] // the last one past a compaction (every 1000 records)
		for sc.Scan() {
			if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "completed ")); err == nil {
				acked = n
				if n >= stopAt {
					break
				}
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if acked < 0 {
			t.Fatalf("round %d: the writer acknowledged nothing", round)
		}
		l, err := volume.New(vols, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(l, "run-test-1", false)
		if err != nil {
			t.Fatalf("round %d: load after kill -9: %v", round, err)
		}
		// A consistent prefix: the writer ran on between the last line read
		// and the kill, so tasks past the acknowledged ones may be done too,
		// but in order, each with its info, then at most one in progress.
		done := 0
		for done < len(st.Tasks) && st.Tasks[done].Status == taskgraph.Completed {
			if id := st.Tasks[done].ID; st.Info[id].Summary != "summary of "+id {
				t.Fatalf("round %d: task %s completed without its info %+v", round, id, st.Info[id])
			}
			done++
		}
		if done <= acked {
			t.Fatalf("round %d: %d tasks acknowledged completed, %d loaded completed", round, acked+1, done)
		}
		for i, task := range st.Tasks[done:] {
			if want := taskgraph.Pending; task.Status != want && !(i == 0 && task.Status == taskgraph.InProgress) {
				t.Fatalf("round %d: task %s is %s after %d completed ones", round, task.ID, task.Status, done)
			}
		}
		// Resume: the next task runs and is recorded after the kill.
		g, err := taskgraph.New(st.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		next := g.Ready()
		if len(next) == 0 {
			next = []string{}
			for _, task := range st.Tasks {
				if task.Status == taskgraph.InProgress {
					_ = g.Fail(task.ID, "killed")
					_ = g.Retry(task.ID)
					next = append(next, task.ID)
				}
			}
			st.Tasks = g.Tasks()
			if err := st.Save(l, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		transition(t, l, st, g, next[0], time.Now())
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := LoadState(l, "run-test-1", false)
		if err != nil {
			t.Fatal(err)
		}
		if comparable(t, again) != comparable(t, st) {
			t.Fatalf("round %d: the resumed run's state does not replay", round)
		}
	}
}

// journalWriter is the child of TestJournalKill9: it completes tasks one
// after the other, printing each once recorded, until it is killed.
func journalWriter(t *testing.T) {
	l, err := volume.New(os.Getenv("JOURNAL_WRITER"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	st := newTestState(t, chain(1000)...)
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	g, _ := taskgraph.New(st.Tasks)
	for i := range 1000 {
		transition(t, l, st, g, benchID(i), time.Now())
		if err := st.Sync(); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("completed %d\n", i)
	}
	time.Sleep(time.Minute) // the parent kills it long before
}

func TestJournalRecordCostIsFlat(t *testing.T) {
	// A record holds the tasks it is about, not the run: its size does not
	// grow with the plan.
	sizes := map[int]int64{}
	for _, n := range []int{10, 2000} {
		l, st, g := startedState(t, n)
		// A fixed time: RFC 3339 drops trailing zeros of the nanoseconds, so
		// time.Now() made the two records differ by a few bytes at random.
		transition(t, l, st, g, benchID(0), time.Date(2026, 11, 23, 1, 2, 3, 123456789, time.UTC))
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(journalPath(l, st.RunID))
		if err != nil {
			t.Fatal(err)
		}
		sizes[n] = fi.Size()
	}
	if sizes[2000] != sizes[10] {
		t.Errorf("journal bytes for one task's transition: %d with 10 tasks, %d with 2000", sizes[10], sizes[2000])
	}
}
