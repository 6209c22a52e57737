//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// BenchmarkRunPlanFile10000 is the whole product on a 10 000-task chain:
// `planagent run --plan` with the local runtime, the real codingagent
// watcher picking up each command over the volumes, one model call per
// task against the test server, the report, the journal. It reports the
// cost per task over the first and the last tenth of the tasks: flat when
// nothing in the run grows with it.
func BenchmarkRunPlanFile10000(b *testing.B) { benchRunPlanFile(b, 10000) }

// BenchmarkRunPlanFile1000 is the same at a tenth of the size.
func BenchmarkRunPlanFile1000(b *testing.B) { benchRunPlanFile(b, 1000) }

func benchRunPlanFile(b *testing.B, n int) {
	var plan strings.Builder
	plan.WriteString("title: a long chain\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&plan, "  - id: t%05d\n    description: \"TOKEN-BULK step %d\"\n", i, i)
		if i > 0 {
			fmt.Fprintf(&plan, "    dependencies: [t%05d]\n", i-1)
		}
	}
	for b.Loop() {
		b.StopTimer()
		e := newBenchEnv(b, &fakeModel{tasks: []scriptTask{{token: "TOKEN-BULK"}}})
		planFile := filepath.Join(e.dir, "plan.yaml")
		if err := os.WriteFile(planFile, []byte(plan.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd := e.command("run", "--plan", planFile, "--yes", "--json")
		b.StartTimer()
		start := time.Now()
		out, err := cmd.Output()
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("run --plan: %v", err)
		}
		starts, end := planEvents(out)
		if end == nil || end["status"] != "completed" || len(starts) != n {
			b.Fatalf("run did not complete: %d tasks started, run_end %v", len(starts), end)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(n), "ms/task")
		tenth := n / 10
		b.ReportMetric(perTask(starts, 0, tenth), "first-tenth-ms/task")
		b.ReportMetric(perTask(starts, n-1-tenth, n-1), "last-tenth-ms/task")
		b.StartTimer()
	}
}

// planEvents reads a `run --json` stream: each task's start time, and the
// run_end event (nil when there is none).
func planEvents(out []byte) (map[string]time.Time, map[string]any) {
	starts := map[string]time.Time{}
	var end map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev struct {
			Type   string    `json:"type"`
			TaskID string    `json:"task_id"`
			Time   time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if ev.Type == "task_start" {
			starts[ev.TaskID] = ev.Time
		}
		if ev.Type == "run_end" {
			_ = json.Unmarshal([]byte(line), &end)
		}
	}
	return starts, end
}

// perTask is the time per task from task from's start to task to's, in ms.
func perTask(starts map[string]time.Time, from, to int) float64 {
	d := starts[taskID(to)].Sub(starts[taskID(from)])
	return float64(d.Microseconds()) / 1000 / float64(to-from)
}

// taskID is the id of the plan's i-th task.
func taskID(i int) string { return fmt.Sprintf("t%05d", i) }

// BenchmarkRunPlanFileWrites100 is the chain of benchRunPlanFile with real
// work to checkpoint: each task writes a file of its own, and its
// acceptance command checks it, in a git workspace. Beside it the same
// number of floor steps (a process spawn and an fsync each) are timed, so
// the ratio holds on a disk whose latency drifts.
func BenchmarkRunPlanFileWrites100(b *testing.B) { benchRunPlanFileWrites(b, 100, benchGitWorkspace) }

// BenchmarkRunPlanFileWrites1000 is the same at ten times the size.
func BenchmarkRunPlanFileWrites1000(b *testing.B) { benchRunPlanFileWrites(b, 1000, benchGitWorkspace) }

// BenchmarkRunPlanFileWritesStdlib20 is the chain of 20 such tasks on a
// project of a real size: a git repository of the Go standard library
// (~11 000 files), where each task's copy is checked out and each agent
// maps the repository into its prompt.
func BenchmarkRunPlanFileWritesStdlib20(b *testing.B) {
	benchRunPlanFileWrites(b, 20, benchStdlibWorkspace)
}

var writeToken = regexp.MustCompile(`TOKEN-WRITE (w\d+\.txt)`)

func benchRunPlanFileWrites(b *testing.B, n int, workspace func(*testing.B, string) string) {
	var plan strings.Builder
	plan.WriteString("title: a long chain of writes\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&plan, "  - id: t%05d\n    description: \"TOKEN-WRITE w%05d.txt\"\n    acceptance: [\"test -s w%05d.txt\"]\n", i, i, i)
		if i > 0 {
			fmt.Fprintf(&plan, "    dependencies: [t%05d]\n", i-1)
		}
	}
	for b.Loop() {
		b.StopTimer()
		f := &fakeModel{}
		e := newBenchEnv(b, f)
		// One write per task, named by its description; the final answer
		// once the write's result is in.
		e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
			m := writeToken.FindStringSubmatch(firstUser(req))
			if m == nil {
				return f.handle(req)
			}
			if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
				return llmtest.Text("Finished the task; all files written.")
			}
			return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": m[1], "content": m[1] + "\n"}))
		})
		ws := workspace(b, e.dir)
		planFile := filepath.Join(e.dir, "plan.yaml")
		if err := os.WriteFile(planFile, []byte(plan.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd := e.command("run", "--plan", planFile, "--yes", "--json", "--workspace", ws)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		probe := startFloorProbe(b)
		b.StartTimer()
		start := time.Now()
		out, err := cmd.Output()
		elapsed := time.Since(start)
		b.StopTimer()
		probes := probe.stop()
		if err != nil {
			b.Fatalf("run --plan: %v\n%s", err, stderr.String())
		}
		starts, end := planEvents(out)
		if end == nil || end["status"] != "completed" || len(starts) != n {
			b.Fatalf("run did not complete: %d tasks started, run_end %v\n%s", len(starts), end, stderr.String())
		}
		if got, err := exec.Command("git", "-C", ws, "rev-list", "--count", "HEAD").Output(); err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(n+1) {
			b.Fatalf("the workspace has %s commits (%v), want %d", got, err, n+1)
		}
		floor := benchFloor(b, n)
		per := float64(elapsed.Microseconds()) / 1000 / float64(n)
		b.ReportMetric(per, "ms/task")
		tenth := n / 10
		first, last := perTask(starts, 0, tenth), perTask(starts, n-1-tenth, n-1)
		b.ReportMetric(first, "first-tenth-ms/task")
		b.ReportMetric(last, "last-tenth-ms/task")
		b.ReportMetric(floor, "floor-ms/task")
		b.ReportMetric(per/floor, "x-floor")
		// The disk's speed drifts over a run of minutes: each tenth
		// against the floor probed during it tells growth from drift.
		if f := probes.mean(starts[taskID(0)], starts[taskID(tenth)]); f > 0 {
			b.ReportMetric(first/f, "first-tenth-x-probe")
		}
		if f := probes.mean(starts[taskID(n-1-tenth)], starts[taskID(n-1)]); f > 0 {
			b.ReportMetric(last/f, "last-tenth-x-probe")
		}
		b.StartTimer()
	}
}

// benchGitWorkspace is a user's small project: a repository with one commit.
func benchGitWorkspace(b *testing.B, dir string) string {
	ws := filepath.Join(dir, "project")
	for i := range 20 {
		p := filepath.Join(ws, fmt.Sprintf("src/pkg%d/file%d.go", i%4, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg%d\n\nconst N%d = %d\n", i%4, i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	commitAll(b, ws)
	return ws
}

// benchStdlibWorkspace is a user's project of a real size: a git
// repository of a copy of the Go standard library, one commit.
func benchStdlibWorkspace(b *testing.B, dir string) string {
	src := filepath.Join(runtime.GOROOT(), "src") //nolint:staticcheck // SA1019: the standard library of the toolchain running the test is what it maps
	ws := filepath.Join(dir, "project")
	if out, err := exec.Command("cp", "-a", src, ws).CombinedOutput(); err != nil {
		b.Fatalf("copy GOROOT/src: %v\n%s", err, out)
	}
	commitAll(b, ws)
	return ws
}

// commitAll makes ws a git repository whose one commit holds all of it.
func commitAll(b *testing.B, ws string) {
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "the user's commit"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// floorProbe times one floor step (benchFloor's) every 100 ms while a
// run goes on: about 1% of a core, and the disk's speed at each moment.
type floorProbe struct {
	done    chan struct{}
	stopped chan []floorSample
}

type floorSample struct {
	at time.Time
	ms float64
}

type floorSamples []floorSample

func startFloorProbe(b *testing.B) *floorProbe {
	p := &floorProbe{done: make(chan struct{}), stopped: make(chan []floorSample, 1)}
	path := filepath.Join(b.TempDir(), "probe")
	go func() {
		var out []floorSample
		defer func() { p.stopped <- out }()
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			start := time.Now()
			if exec.Command("sh", "-c", "true").Run() != nil {
				return
			}
			if _, err := f.WriteString("a journal record\n"); err != nil || f.Sync() != nil {
				return
			}
			out = append(out, floorSample{at: start, ms: float64(time.Since(start).Microseconds()) / 1000})
		}
	}()
	return p
}

func (p *floorProbe) stop() floorSamples {
	close(p.done)
	return <-p.stopped
}

// mean is the mean floor step probed between from and to (0: none).
func (s floorSamples) mean(from, to time.Time) float64 {
	sum, n := 0.0, 0
	for _, x := range s {
		if !x.at.Before(from) && x.at.Before(to) {
			sum += x.ms
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// benchFloor is what a task cannot cost less than, in ms: one process
// spawn (the acceptance command's) and one fsync (the journal's) on the
// same disk, averaged over n.
func benchFloor(b *testing.B, n int) float64 {
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	for range n {
		if err := exec.Command("sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteString("a journal record\n"); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(n)
}
