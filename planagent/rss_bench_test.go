//go:build e2e

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// BenchmarkStdlibRunPeakRSS plans (the planner's prompt carries the repo
// map) and runs a two-task plan with the local runtime over a copy of the Go standard library (GOROOT/src, ~157 MB,
// ~10 000 files) and reports the peak resident set of planagent and of the
// codingagent it starts (VmHWM, sampled every 10 ms until each exits: the
// high-water mark only grows, so sampling loses at most the last 10 ms).
// Each agent task maps the repository and reads a file. Goal: both under
// 100 MB, planagent 50 MB.
func BenchmarkStdlibRunPeakRSS(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src") //nolint:staticcheck // SA1019: the standard library of the toolchain running the test is what it maps
	if _, err := os.Stat(src); err != nil {
		b.Fatalf("GOROOT/src is needed: %v", err)
	}
	for b.Loop() {
		b.StopTimer()
		f := &fakeModel{plan: `{"title":"Note where errors.New lives","overview":"Map, then note.","tasks":[
 {"id":"map","description":"TOKEN-MAP: map the repository and read errors/errors.go","dependencies":[]},
 {"id":"note","description":"TOKEN-NOTE: write NOTES.txt","dependencies":["map"]}]}`, tasks: []scriptTask{
			{token: "TOKEN-MAP", steps: []llmtest.ToolCall{
				llmtest.Call("repo_map", map[string]any{"tokens": 2048}),
				llmtest.Call("read_file", map[string]any{"path": "errors/errors.go"}),
			}},
			{token: "TOKEN-NOTE", steps: []llmtest.ToolCall{
				llmtest.Call("grep", map[string]any{"pattern": "func New\\(", "path": "errors"}),
				llmtest.Call("write_file", map[string]any{"path": "NOTES.txt", "content": "errors.New is in errors/errors.go\n"}),
			}},
		}}
		e := newBenchEnv(b, f)
		ws := filepath.Join(e.dir, "ws")
		if out, err := exec.Command("cp", "-a", src, ws).CombinedOutput(); err != nil {
			b.Fatalf("copy GOROOT/src: %v\n%s", err, out)
		}
		cmd := e.command("run", "--yes", "--json", "--workspace", ws, "note where errors.New lives")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		b.StartTimer()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		peaks := map[string]int{}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
	poll:
		for {
			for pid, name := range descendants(cmd.Process.Pid) {
				if kb := vmHWM(pid); kb > peaks[name] {
					peaks[name] = kb
				}
			}
			select {
			case err = <-done:
				break poll
			case <-time.After(10 * time.Millisecond):
			}
		}
		b.StopTimer()
		if err != nil {
			b.Fatalf("planagent run: %v\n%s", err, out.String())
		}
		if got, err := os.ReadFile(filepath.Join(ws, "NOTES.txt")); err != nil || !strings.Contains(string(got), "errors.New") {
			b.Fatalf("the run did not write NOTES.txt (%v)\n%s", err, out.String())
		}
		b.ReportMetric(float64(peaks["planagent"])/1024, "planagent-peak-MB")
		b.ReportMetric(float64(peaks["codingagent"])/1024, "codingagent-peak-MB")
		b.StartTimer()
	}
}

// newBenchEnv is newRunEnv for a benchmark.
func newBenchEnv(b *testing.B, f *fakeModel) *runEnv {
	buildPrograms(b)
	f.starts = map[string]int{}
	srv := llmtest.New(b)
	srv.Handle(f.handle)
	dir := b.TempDir()
	return &runEnv{dir: dir, volumes: filepath.Join(dir, "volumes"), srv: srv, key: "test-key"}
}

// descendants maps pid and every process below it to its command name.
func descendants(pid int) map[int]string {
	out := map[int]string{}
	var walk func(int)
	walk = func(p int) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil {
			return
		}
		out[p] = strings.TrimSpace(string(comm))
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			data, _ := os.ReadFile(t)
			for _, c := range strings.Fields(string(data)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	return out
}

// vmHWM is a process's peak resident set in kB (0 once it is gone).
func vmHWM(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb
		}
	}
	return 0
}
