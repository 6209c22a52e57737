//go:build e2e

package main

// The fence from inside the attempts' containers (issue 36): an agent that
// forges its report, leaves processes running that keep changing its copy
// (gitfiles, a swapper of its .git, late files), writes at the volumes of
// other tasks, or has the acceptance commands run its code gets none of it
// through. Each scenario runs in git mode (the user's .git) and in shadow
// mode (a plain directory), with the real engine and the image `make
// image` built (the codingagent under test is bind-mounted into it).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint/hostile"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// fenceEnv is a docker run over a workspace in one mode, with a markers
// directory on the host that only a program run on the host (or a write
// through a planted link) can fill.
type fenceEnv struct {
	*runEnv
	mode    string // "git" or "shadow"
	ws      string
	gitDir  string // the user's .git, or the shadow repository's
	markers string
	before  repoState // git mode: the user's repository before the run
	base    string    // git mode: the user's commit the run starts from
	started time.Time
}

// repoState is what of the user's repository no run may change: every ref
// but the branch the run moves and planagent's own, packed-refs, config,
// the hooks and HEAD, byte for byte.
type repoState struct {
	refs, packed, config, head string
	hooks                      map[string]string
}

// newFenceEnv makes the workspace with files (path → content; a name
// ending in "*" is made executable) and, in git mode, a user's repository
// with a tag, a second branch, a hook and every ref packed.
func newFenceEnv(t *testing.T, mode string, f *fakeModel, files map[string][]byte) *fenceEnv {
	t.Helper()
	e := dockerRuntime(t, f)
	fixedUsage(e, f)
	fe := &fenceEnv{runEnv: e, mode: mode, markers: t.TempDir(), started: time.Now()}
	write := func(ws string) {
		for name, content := range files {
			perm := os.FileMode(0o644)
			if strings.HasSuffix(name, "*") {
				name, perm = strings.TrimSuffix(name, "*"), 0o755
			}
			writeFile(t, ws, name, string(content))
			if err := os.Chmod(filepath.Join(ws, name), perm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if mode == "git" {
		fe.ws = gitWorkspace(t, e)
		fe.gitDir = filepath.Join(fe.ws, ".git")
		write(fe.ws)
		gitIn(t, fe.ws, "add", "-A")
		gitIn(t, fe.ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "the user's tools")
		gitIn(t, fe.ws, "tag", "v1")
		gitIn(t, fe.ws, "branch", "keep")
		gitIn(t, fe.ws, "pack-refs", "--all")
		writeFile(t, fe.gitDir, "hooks/pre-commit", "#!/bin/sh\nexit 0\n")
		fe.before = fe.repoState()
		fe.base = gitIn(t, fe.ws, "rev-parse", "HEAD")
	} else {
		fe.ws = filepath.Join(e.dir, "plain")
		writeFile(t, fe.ws, "notes.txt", "one\ntwo\nthree\n")
		write(fe.ws)
		fe.gitDir = checkpoint.ShadowDir(filepath.Join(e.volumes, "checkpoints"), fe.ws)
	}
	return fe
}

func (fe *fenceEnv) repoState() repoState {
	t := fe.t
	t.Helper()
	var refs []string
	for _, l := range strings.Split(gitIn(t, fe.ws, "for-each-ref", "--format=%(refname) %(objectname) %(symref)"), "\n") {
		if !strings.HasPrefix(l, "refs/heads/main ") && !strings.HasPrefix(l, "refs/codeagent/") {
			refs = append(refs, l)
		}
	}
	s := repoState{refs: strings.Join(refs, "\n"), hooks: map[string]string{}}
	s.packed = readFile(t, fe.gitDir, "packed-refs")
	s.config = readFile(t, fe.gitDir, "config")
	s.head = readFile(t, fe.gitDir, "HEAD")
	entries, err := os.ReadDir(filepath.Join(fe.gitDir, "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(fe.gitDir, "hooks", en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s.hooks[en.Name()] = string(b)
	}
	return s
}

// assertIntact checks what no agent may reach: no marker, the user's
// repository as it was (git mode) or the workspace without a .git and the
// shadow repository without a setting that runs anything (shadow mode),
// git fsck clean, and no gitlink or .git in any commit of the branch.
func (fe *fenceEnv) assertIntact() {
	t := fe.t
	t.Helper()
	entries, _ := os.ReadDir(fe.markers)
	for _, m := range entries {
		t.Errorf("a program of the agent's ran on the host, or a write went through its link: %s in the markers dir", m.Name())
	}
	gd := "--git-dir=" + fe.gitDir
	if fe.mode == "git" {
		now := fe.repoState()
		if now.refs != fe.before.refs {
			t.Errorf("the user's refs changed:\n%s\nwas:\n%s", now.refs, fe.before.refs)
		}
		for _, c := range []struct{ what, now, was string }{
			{"packed-refs", now.packed, fe.before.packed}, {"config", now.config, fe.before.config}, {"HEAD", now.head, fe.before.head},
		} {
			if c.now != c.was {
				t.Errorf("the user's %s changed:\n%s\nwas:\n%s", c.what, c.now, c.was)
			}
		}
		if !maps.Equal(now.hooks, fe.before.hooks) {
			t.Errorf("the user's hooks changed: %v, were %v", slices.Sorted(maps.Keys(now.hooks)), slices.Sorted(maps.Keys(fe.before.hooks)))
		}
		if b := gitIn(t, fe.ws, "symbolic-ref", "HEAD"); b != "refs/heads/main" {
			t.Errorf("HEAD = %s, want refs/heads/main", b)
		}
		if err := exec.Command("git", gd, "merge-base", "--is-ancestor", fe.base, "refs/heads/main").Run(); err != nil {
			t.Errorf("main no longer descends from the user's commit %s: %v", fe.base[:12], err)
		}
		if st := gitIn(t, fe.ws, "status", "--porcelain"); st != "" {
			t.Errorf("the workspace is not clean: %q", st)
		}
	} else {
		_ = filepath.WalkDir(fe.ws, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.EqualFold(d.Name(), ".git") {
				t.Errorf("the plain workspace got %s", p)
			}
			return nil
		})
		if _, err := exec.Command("git", gd, "symbolic-ref", "-q", "HEAD").Output(); err != nil {
			t.Errorf("the shadow repository's HEAD is no symbolic ref: %v", err)
		}
		out, err := exec.Command("git", "config", "--file", filepath.Join(fe.gitDir, "config"), "--name-only", "--list").Output()
		if err != nil {
			t.Errorf("the shadow repository's config: %v", err)
		}
		for _, k := range strings.Fields(string(out)) {
			for _, bad := range []string{"filter.", "hookspath", "fsmonitor", "include", "alias.", "sshcommand", "worktree", "gitproxy", "askpass", "pager", "editor"} {
				if strings.Contains(strings.ToLower(k), bad) {
					t.Errorf("the shadow repository's config has %s", k)
				}
			}
		}
		hooks, _ := os.ReadDir(filepath.Join(fe.gitDir, "hooks"))
		for _, h := range hooks {
			if !strings.HasSuffix(h.Name(), ".sample") {
				t.Errorf("the shadow repository has the hook %s", h.Name())
			}
		}
		if _, err := os.Lstat(filepath.Join(fe.gitDir, "commondir")); err == nil {
			t.Error("the shadow repository has a commondir")
		}
	}
	if out, err := exec.Command("git", gd, "fsck", "--full", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck --full --strict: %v\n%s", err, out)
	}
	commits, err := exec.Command("git", gd, "log", "--format=%H", "HEAD").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	for _, c := range strings.Fields(string(commits)) {
		tree, err := exec.Command("git", gd, "ls-tree", "-r", c).Output()
		if err != nil {
			t.Fatalf("git ls-tree %s: %v", c, err)
		}
		for _, l := range strings.Split(string(tree), "\n") {
			if strings.HasPrefix(l, "160000 ") {
				t.Errorf("commit %s holds a gitlink: %s", c[:12], l)
			}
			if _, path, ok := strings.Cut(l, "\t"); ok && slices.ContainsFunc(strings.Split(path, "/"), func(s string) bool { return strings.EqualFold(s, ".git") }) {
				t.Errorf("commit %s holds a .git: %s", c[:12], l)
			}
		}
	}
}

// runFence runs planagent on the workspace, stderr time-stamped: at is
// when mark first showed on it (zero when it never did).
func (fe *fenceEnv) runFence(parallel int, mark string) (out, stderr string, code int, at time.Time) {
	t := fe.t
	cmd := fe.command("run", "--yes", "--json", "--workspace", fe.ws, "--parallel", strconv.Itoa(parallel), "--max-retries", "0", "fence")
	var o bytes.Buffer
	w := &stampedWriter{mark: mark}
	cmd.Stdout, cmd.Stderr = &o, w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start planagent: %v", err)
	}
	timer := time.AfterFunc(150*time.Second, func() { _ = cmd.Process.Signal(syscall.SIGQUIT) })
	err := cmd.Wait()
	timer.Stop()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run planagent: %v", err)
	}
	t.Logf("planagent run: exit %d in %s", code, time.Since(start).Round(time.Millisecond))
	w.mu.Lock()
	defer w.mu.Unlock()
	return o.String(), w.buf.String(), code, w.at
}

type stampedWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	at   time.Time
}

func (w *stampedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.at.IsZero() && w.mark != "" && strings.Contains(w.buf.String(), w.mark) {
		w.at = time.Now()
	}
	return len(p), nil
}

// taskEnds are the run's task_end events by task.
func taskEnds(t *testing.T, out string) map[string]map[string]any {
	ends := map[string]map[string]any{}
	for _, ev := range jsonEvents(t, out) {
		if ev["type"] == "task_end" {
			id, _ := ev["task_id"].(string)
			ends[id] = ev
		}
	}
	return ends
}

// assertHonest checks that task id completed with what its agent really
// used: the fake model books 1000 prompt and 100 completion tokens per
// answer, and the task had at least answers of them (a forged report says
// 1 and 1), in its task_end event and in the run's state.json alike; and
// that no forged summary was taken.
func (fe *fenceEnv) assertHonest(ends map[string]map[string]any, id string, answers int) {
	t := fe.t
	t.Helper()
	ev := ends[id]
	if ev == nil {
		t.Errorf("task %s: no task_end event", id)
		return
	}
	if ev["status"] != "completed" {
		t.Errorf("task %s: %v, want completed", id, ev)
	}
	if strings.Contains(fmt.Sprint(ev), "FORGED") {
		t.Errorf("task %s: the forged report was taken: %v", id, ev)
	}
	u, _ := ev["usage"].(map[string]any)
	prompt, _ := u["prompt"].(float64)
	completion, _ := u["completion"].(float64)
	if p, c := int(prompt), int(completion); p < answers*1000 || p%1000 != 0 || c*10 != p {
		t.Errorf("task %s booked %d prompt and %d completion tokens, want the model's own (%d answers or more of 1000 and 100)", id, p, c, answers)
	}
	paths, _ := filepath.Glob(filepath.Join(fe.volumes, "runs", "*", "state.json"))
	if len(paths) != 1 {
		t.Fatalf("run states: %v, want one", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Info map[string]struct {
			Summary string `json:"summary"`
			Tokens  struct{ Prompt, Completion int }
		} `json:"info"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	in := st.Info[id]
	t.Logf("task %s: %s; %d prompt and %d completion tokens", id, ev["status"], int(prompt), int(completion))
	if in.Tokens.Prompt != int(prompt) || in.Tokens.Completion != int(completion) {
		t.Errorf("task %s: state.json books %+v, task_end %v", id, in.Tokens, u)
	}
	if strings.Contains(in.Summary, "FORGED") {
		t.Errorf("task %s: state.json has the forged summary %q", id, in.Summary)
	}
}

// assertNoFile checks that no file under the volumes or the workspace
// holds s (a string the agent's scripts only put together at run time).
func (fe *fenceEnv) assertNoFile(s string) {
	t := fe.t
	t.Helper()
	for _, root := range []string{fe.volumes, fe.ws} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %s", p, s)
			}
			return nil
		})
	}
}

// forgeReport is a shell script that writes a completed report of task id
// with 1 prompt and 1 completion token and a cost of $77.50 into reports/ as the agent sees it,
// its run id and attempt read from the command of task own, atomically as
// codingagent would; its summary, "FORGED-<id>", is put together at run
// time, so that only a forged report can bring it to a file.
func forgeReport(own, id string) string {
	return strings.NewReplacer("OWN", own, "ID", id).Replace(`V=/codeagent/volumes
echo "volumes:"; ls -a $V $V/commands $V/commands/.claimed $V/reports 2>&1
C=$(ls $V/commands/.claimed/OWN.md $V/commands/OWN.md 2>/dev/null | head -n 1)
RUN=$(sed -n 's/^run_id: *//p' "$C" | head -n 1 | tr -d "\"'")
ATT=$(sed -n 's/^attempt: *//p' "$C" | head -n 1)
F=FOR; S="${F}GED-ID"
mkdir -p $V/reports
{ echo ---; echo "id: ID"; echo "run_id: $RUN"; echo "attempt: $ATT"; echo "status: completed"; echo "summary: $S"
  echo "files_changed: []"; echo "tokens:"; echo "  prompt: 1"; echo "  completion: 1"; echo "  cost_usd: 77.5"; echo "duration: 1s"; echo ---; echo "$S"; } > $V/reports/.ID.md.tmp
mv -f $V/reports/.ID.md.tmp $V/reports/ID.md && echo "forged ID: run $RUN attempt $ATT"
`)
}

// detached starts script as a process of its own session, out of the
// shell tool's process group and with no pipe of it held: it outlives the
// tool call, and only the fence ends it.
func detached(script string) string {
	return "setsid sh -c '" + script + "' </dev/null >/dev/null 2>&1 &\n"
}

// 1. The agent forges its report (completed, 1 and 1 tokens) and leaves a
// loop running that keeps making 40 gitfiles into a repository with a
// clean filter and fsmonitor that touch a marker on the host; its model
// goes on (a write, the answer) and a second task follows in the copy the
// first one's is recycled to. The forged report is never taken (the tokens
// booked are the model's), no gitlink reaches a commit, nothing runs on
// the host.
func TestE2EDockerFenceForgedReportAndRacingGitlinks(t *testing.T) {
	dockerE2E(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[
 {"id":"forge","title":"Forge","description":"TOKEN-FORGE: forge","dependencies":[]},
 {"id":"after","title":"After","description":"TOKEN-AFTER: after","dependencies":["forge"]}]}`
			f := &fakeModel{plan: plan}
			fe := newFenceEnv(t, mode, f, nil)
			marker := filepath.Join(fe.markers, "filter")
			loop := `while :; do for i in $(seq 1 40); do mkdir -p g$i; echo "gitdir: ../evil/.git" > g$i/.git; cp evil.attributes g$i/.gitattributes; echo $i > g$i/f.txt; done; sleep 0.01; done`
			script := forgeReport("forge", "forge") +
				"git init -q evil && git -C evil -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && " +
				"git -C evil config filter.evil.clean 'touch MARKER; cat' && git -C evil config filter.evil.smudge 'touch MARKER; cat' && " +
				"git -C evil config core.fsmonitor 'touch MARKER; false' && printf '* filter=evil\\n' > evil.attributes || echo NO-EVIL-REPO\n" +
				detached(loop) +
				"for i in $(seq 100); do [ $(ls -d g*/.git 2>/dev/null | wc -l) -ge 40 ] && break; sleep 0.1; done\n" +
				"echo racing-gitfiles=$(ls -d g*/.git 2>/dev/null | wc -l)"
			script = strings.ReplaceAll(script, "MARKER", marker)
			f.setScript(plan, []scriptTask{
				{token: "TOKEN-FORGE", steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": script}),
					llmtest.Call("write_file", map[string]any{"path": "done/forge.txt", "content": "forge\n"}),
				}},
				{token: "TOKEN-AFTER", steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": "echo after-look; ls -d g* evil 2>&1; test -e g1/.git && echo GITFILE-LEFT; true"}),
					llmtest.Call("write_file", map[string]any{"path": "done/after.txt", "content": "after\n"}),
				}},
			})
			out, stderr, code, _ := fe.runFence(1, "")
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			planted := fe.toolResult("racing-gitfiles")
			t.Logf("the agent's shell:\n%s", planted)
			if !strings.Contains(planted, "forged forge: run ") || !strings.Contains(planted, "racing-gitfiles=40") || strings.Contains(planted, "NO-EVIL-REPO") {
				t.Errorf("the forged report and the racing gitfiles were not planted:\n%s", planted)
			}
			look := fe.toolResult("after-look")
			t.Logf("the next task's copy:\n%s", look)
			if strings.Contains(look, "GITFILE-LEFT") {
				t.Errorf("the next task's copy still had the gitfiles:\n%s", look)
			}
			ends := taskEnds(t, out)
			fe.assertHonest(ends, "forge", 3)
			fe.assertHonest(ends, "after", 3)
			fe.assertNoFile("FORGED-forge")
			fe.assertIntact()
			if got := readFile(t, fe.ws, "done/after.txt"); got != "after\n" {
				t.Errorf("the second task's file: %q", got)
			}
		})
	}
}

// 1b. The agent forges its report and then makes its reports/ read-only,
// so that codingagent's own report cannot replace the forgery: codingagent
// exits 1, and the forged report, though in place, is not taken. The task
// fails naming why; nothing of the forgery reaches the run.
func TestE2EDockerFenceForgedReportOfAFailedAgentIsNotTaken(t *testing.T) {
	dockerE2E(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[{"id":"stuck","title":"Stuck","description":"TOKEN-STUCK: stuck","dependencies":[]}]}`
			f := &fakeModel{plan: plan}
			fe := newFenceEnv(t, mode, f, nil)
			script := forgeReport("stuck", "stuck") + "chmod 555 /codeagent/volumes/reports && echo reports-read-only"
			f.setScript(plan, []scriptTask{{token: "TOKEN-STUCK", steps: []llmtest.ToolCall{
				llmtest.Call("shell_exec", map[string]any{"command": script}),
				llmtest.Call("write_file", map[string]any{"path": "done/stuck.txt", "content": "stuck\n"}),
			}}})
			out, stderr, code, _ := fe.runFence(1, "")
			if code != 1 {
				t.Errorf("exit %d, want 1 (the task failed)\n%s", code, stderr)
			}
			if r := fe.toolResult("reports-read-only"); !strings.Contains(r, "forged stuck: run ") || !strings.Contains(r, "reports-read-only") {
				t.Errorf("the forged report was not planted:\n%s", r)
			}
			ev := taskEnds(t, out)["stuck"]
			if ev["status"] != "failed" || !strings.Contains(fmt.Sprint(ev), "a report is taken only from an agent that ended normally") || strings.Contains(fmt.Sprint(ev), "FORGED") {
				t.Errorf("task stuck: %v, want failed naming the agent's exit", ev)
			}
			fe.assertNoFile("FORGED-stuck")
			if _, err := os.Lstat(filepath.Join(fe.ws, "done", "stuck.txt")); err == nil {
				t.Error("the failed task's file reached the workspace")
			}
			fe.assertIntact()
		})
	}
}

// swapSource loops forever: whenever the working directory's .git is a
// directory, it exchanges it atomically (renameat2 RENAME_EXCHANGE) with a
// link to os.Args[1], the user's git directory.
const swapSource = `package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	for i := 0; ; i++ {
		if fi, err := os.Lstat(".git"); err == nil && fi.IsDir() {
			tmp := fmt.Sprintf(".git-swapped-%d", i)
			if os.Symlink(os.Args[1], tmp) == nil && unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, ".git", unix.RENAME_EXCHANGE) != nil {
				_ = os.Remove(tmp)
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}
`

// buildSwap builds swapSource as a static binary.
func buildSwap(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "swap.go")
	if err := os.WriteFile(src, []byte(swapSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "swap")
	// From this module, whose golang.org/x/sys it uses.
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the swapper: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// 2. The agent forges its report and starts a program of the user's
// repository (tools/swap, committed before the run) that keeps swapping
// its copy's .git for a link to the user's git directory. The user's .git
// stays as it was.
func TestE2EDockerFenceForgedReportAndGitSwapper(t *testing.T) {
	dockerE2E(t)
	swap := buildSwap(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[{"id":"swapper","title":"Swap","description":"TOKEN-SWAP: swap","dependencies":[]}]}`
			f := &fakeModel{plan: plan}
			fe := newFenceEnv(t, mode, f, map[string][]byte{"tools/swap*": swap})
			script := forgeReport("swapper", "swapper") +
				"setsid tools/swap " + fe.gitDir + " </dev/null >/dev/null 2>&1 &\n" +
				"sleep 0.5; test -L .git && echo swapped=yes; echo swap-started"
			f.setScript(plan, []scriptTask{{token: "TOKEN-SWAP", steps: []llmtest.ToolCall{
				llmtest.Call("shell_exec", map[string]any{"command": script}),
				llmtest.Call("write_file", map[string]any{"path": "done/swap.txt", "content": "swapped\n"}),
			}}})
			out, stderr, code, _ := fe.runFence(1, "")
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			if planted := fe.toolResult("swap-started"); !strings.Contains(planted, "forged swapper: run ") || !strings.Contains(planted, "swapped=yes") {
				t.Errorf("the forged report and the swapper were not planted:\n%s", planted)
			}
			fe.assertHonest(taskEnds(t, out), "swapper", 3)
			fe.assertNoFile("FORGED-swapper")
			fe.assertIntact()
			if got := readFile(t, fe.ws, "done/swap.txt"); got != "swapped\n" {
				t.Errorf("the task's file: %q", got)
			}
			if _, err := os.Lstat(filepath.Join(fe.ws, ".git-swapped-0")); err == nil {
				t.Error("the copy's swapped-away git directory reached the workspace")
			}
		})
	}
}

// 3. Each container sees only its own files: the agent of alpha lists the
// task contexts, writes a report of bravo (running beside it) and a file
// into the project context, and plants links to a host directory in place
// of the context's directories and files. None of it reaches the host's
// volumes; bravo completes with its own report.
func TestE2EDockerFenceEachContainerSeesOnlyItsOwn(t *testing.T) {
	dockerE2E(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[
 {"id":"alpha-fence","title":"Alpha","description":"TOKEN-ALPHA-F: alpha","dependencies":[]},
 {"id":"bravo-fence","title":"Bravo","description":"TOKEN-BRAVO-F: bravo","dependencies":[]}]}`
			f := &fakeModel{plan: plan, together: 2}
			fe := newFenceEnv(t, mode, f, nil)
			M := fe.markers
			script := `V=/codeagent/volumes
echo ls-task; ls -a $V/context/task; echo ls-end
echo seen:; find $V -maxdepth 4 ! -path "$V/attempts/*/*/*" 2>/dev/null | sort
` + forgeReport("alpha-fence", "bravo-fence") + `P=PLAN; X="${P}TED-X"
echo "$X" > $V/context/project/x.md; echo project-write=$?
echo "$X" > $V/context/overview.md; echo overview-write=$?
ln -s ` + M + ` $V/context/project/link; echo project-link=$?
mv $V/context/task $V/context/task.moved && ln -s ` + M + ` $V/context/task; echo task-link=$?
ln -s / $V/context/root; echo root-link=$?
rm -f $V/context/memory.md; ln -s ` + M + `/memory $V/context/memory.md; echo memory-link=$?
ln -s ` + M + `/summary $V/reports/summary.md; echo summary-link=$?
ln -s ` + M + `/bravo-events $V/reports/bravo-fence.events.jsonl; echo events-link=$?
echo alpha-planted`
			f.setScript(plan, []scriptTask{
				{token: "TOKEN-ALPHA-F", steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": script}),
					llmtest.Call("write_file", map[string]any{"path": "alpha.txt", "content": "alpha\n"}),
				}},
				// bravo's first step waits for alpha's answer: alpha's forgery
				// is written while bravo's attempt runs.
				{token: "TOKEN-BRAVO-F", after: "TOKEN-ALPHA-F", steps: []llmtest.ToolCall{
					llmtest.Call("write_file", map[string]any{"path": "bravo.txt", "content": "bravo\n"}),
				}},
			})
			out, stderr, code, _ := fe.runFence(2, "")
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			seen := fe.toolResult("alpha-planted")
			t.Logf("alpha's container saw:\n%s", seen)
			if !strings.Contains(seen, "forged bravo-fence: run ") {
				t.Errorf("alpha did not forge bravo's report:\n%s", seen)
			}
			_, ls, _ := strings.Cut(seen, "ls-task\n")
			ls, _, _ = strings.Cut(ls, "ls-end")
			if got := strings.Fields(ls); !slices.Equal(got, []string{".", "..", "alpha-fence"}) {
				t.Errorf("alpha's container lists the task contexts %q, want its own alone", got)
			}
			_, list, _ := strings.Cut(seen, "seen:\n")
			list, _, _ = strings.Cut(list, "volumes:")
			for _, other := range []string{"bravo-fence", "/runs", "/checkpoints", "/workspace", "/io"} {
				if strings.Contains(list, other) {
					t.Errorf("alpha's container sees %s:\n%s", other, list)
				}
			}
			ends := taskEnds(t, out)
			fe.assertHonest(ends, "alpha-fence", 3)
			fe.assertHonest(ends, "bravo-fence", 2)
			if rep := fe.read("reports/bravo-fence.md"); strings.Contains(rep, "FORGED") || !strings.Contains(rep, "status: completed") {
				t.Errorf("bravo's report on the host:\n%s", rep)
			}
			fe.assertNoFile("FORGED-bravo-fence")
			fe.assertNoFile("PLANTED-X")
			ctx := filepath.Join(fe.volumes, "context")
			for _, p := range []string{"project/x.md", "project/link", "task.moved", "root"} {
				if _, err := os.Lstat(filepath.Join(ctx, p)); err == nil {
					t.Errorf("context/%s reached the host's volumes", p)
				}
			}
			for _, p := range []string{"context/task", "context/memory.md", "reports/summary.md", "reports/bravo-fence.events.jsonl"} {
				if fi, err := os.Lstat(filepath.Join(fe.volumes, p)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					t.Errorf("%s on the host is a link", p)
				}
			}
			for _, name := range []string{"alpha.txt", "bravo.txt"} {
				if got := readFile(t, fe.ws, name); got != strings.TrimSuffix(name, ".txt")+"\n" {
					t.Errorf("%s: %q", name, got)
				}
			}
			fe.assertIntact()
		})
	}
}

// 4. The agent leaves a loop writing spill/<n>.txt every 10 ms, forever,
// and a gitfile spill/.git the squash removes (and says so on stderr). The
// task's commit is taken from a dead tree: the attempt's container was
// removed before that line, the commit's spill files are 1..n each with its
// number, the workspace holds the same and nothing changes after the run,
// and no container of the run is left.
func TestE2EDockerFenceLateWriterIsDeadBeforeTheCommit(t *testing.T) {
	cli := dockerE2E(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[{"id":"late","title":"Late","description":"TOKEN-LATE: late","dependencies":[]}]}`
			f := &fakeModel{plan: plan}
			fe := newFenceEnv(t, mode, f, nil)
			script := "mkdir -p spill && echo 'gitdir: ../nowhere' > spill/.git\n" +
				detached(`i=0; while :; do i=$((i+1)); echo $i > spill/$i.txt; sleep 0.01; done`) +
				"sleep 0.3; echo spill-files=$(ls spill | wc -l)"
			f.setScript(plan, []scriptTask{{token: "TOKEN-LATE", steps: []llmtest.ToolCall{
				llmtest.Call("shell_exec", map[string]any{"command": script}),
				llmtest.Call("write_file", map[string]any{"path": "done/late.txt", "content": "late\n"}),
			}}})
			const squashed = "removed from the attempt's copy before its commit"
			out, stderr, code, at := fe.runFence(1, squashed)
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			if r := fe.toolResult("spill-files"); strings.Contains(r, "spill-files=0") || !strings.Contains(r, "spill-files=") {
				t.Errorf("the late writer did not start:\n%s", r)
			}
			fe.assertHonest(taskEnds(t, out), "late", 3)
			if at.IsZero() {
				t.Errorf("no %q line on stderr:\n%s", squashed, stderr)
			} else if gone := destroyedAt(t, cli, fe.started, layout.LabelVolumes+"="+fe.volumes, layout.LabelTask+"=late"); gone.IsZero() || !gone.Before(at) {
				t.Errorf("the attempt's container was removed at %s, the squash had removed spill/.git by %s: not before", gone.Format(time.StampMicro), at.Format(time.StampMicro))
			} else {
				t.Logf("the attempt's container was removed %s before the squash's line", at.Sub(gone).Round(time.Microsecond))
			}
			// The commit's spill files: 1..n, each with its number; the
			// last one may be cut short by the SIGKILL that ended its
			// writer between the file's creation and the write.
			committed := lateFiles(t, fe.gitDir)
			if len(committed) == 0 {
				t.Fatal("the commit holds no spill file")
			}
			for i := 1; i <= len(committed); i++ {
				want := strconv.Itoa(i) + "\n"
				got, ok := committed[strconv.Itoa(i)+".txt"]
				if !ok || got != want && (i < len(committed) || !strings.HasPrefix(want, got)) {
					t.Errorf("the commit's spill/%d.txt: %q (present %v) of %d files: not a consistent prefix", i, got, ok, len(committed))
				}
			}
			t.Logf("the commit holds %d spill files", len(committed))
			snap := func() map[string]string {
				m := map[string]string{}
				for _, root := range []string{fe.ws, fe.volumes} {
					_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
						if err == nil && d.Type().IsRegular() && strings.Contains(p, "/spill/") {
							b, _ := os.ReadFile(p)
							m[p] = string(b)
						}
						return nil
					})
				}
				return m
			}
			first := snap()
			time.Sleep(2 * time.Second) // what a live writer would change meanwhile
			if second := snap(); !maps.Equal(first, second) {
				t.Errorf("spill files changed after the run: %d then %d", len(first), len(second))
			}
			onDisk := map[string]string{}
			for p, c := range first {
				if strings.HasPrefix(p, fe.ws+"/spill/") {
					onDisk[filepath.Base(p)] = c
				}
			}
			if !maps.Equal(onDisk, committed) {
				t.Errorf("the workspace's spill files (%d) are not the commit's (%d)", len(onDisk), len(committed))
			}
			for p := range first {
				if strings.HasPrefix(p, fe.volumes) {
					t.Errorf("a spill file is left in the volumes: %s", p)
				}
			}
			assertNoContainers(t, cli, layout.LabelVolumes+"="+fe.volumes)
			fe.assertIntact()
		})
	}
}

// lateFiles reads spill/ of the branch's head commit: name → content.
func lateFiles(t *testing.T, gitDir string) map[string]string {
	t.Helper()
	gd := "--git-dir=" + gitDir
	ls, err := exec.Command("git", gd, "ls-tree", "HEAD:spill").Output()
	if err != nil {
		t.Fatalf("git ls-tree HEAD:spill: %v", err)
	}
	var names, ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(ls)), "\n") {
		meta, name, ok := strings.Cut(l, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			names, ids = append(names, name), append(ids, f[2])
		}
	}
	cmd := exec.Command("git", gd, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	files := map[string]string{}
	r := bytes.NewReader(out)
	for _, name := range names {
		var id, typ string
		var size int
		if _, err := fmt.Fscanf(r, "%s %s %d\n", &id, &typ, &size); err != nil {
			t.Fatalf("git cat-file --batch output: %v", err)
		}
		b := make([]byte, size+1)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		files[name] = string(b[:size])
	}
	return files
}

// destroyedAt is when the engine removed the container labelled labels
// created since since (zero when it did not).
func destroyedAt(t *testing.T, cli *client.Client, since time.Time, labels ...string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res := cli.Events(ctx, client.EventsListOptions{
		Since:   strconv.FormatInt(since.Add(-time.Second).Unix(), 10),
		Until:   strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10),
		Filters: make(client.Filters).Add("type", "container").Add("event", "destroy").Add("label", labels...),
	})
	var at time.Time
	for {
		select {
		case m := <-res.Messages:
			if m.Action == events.ActionDestroy && m.Actor.Attributes[layout.LabelRole] == "attempt" {
				at = time.Unix(0, m.TimeNano)
			}
		case err := <-res.Err:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Errorf("docker events: %v", err)
			}
			return at
		}
	}
}

// 5. The acceptance commands run what the agent wrote (check.sh), in a
// container over a copy of the merged tree that is then recycled for the
// next task: the first task's check starts the swapper (its acceptance
// passes only once the copy's .git is a link to the user's git directory),
// the second's plants every escape of the audit. The container's end ends
// them: the user's repository is intact, nothing runs on the host, and the
// third task's copy has a plain .git with none of it.
func TestE2EDockerFenceAcceptanceRunsTheAgentsCode(t *testing.T) {
	dockerE2E(t)
	swap := buildSwap(t)
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			plan := `{"title":"Fence","overview":"x","tasks":[
 {"id":"one","title":"One","description":"TOKEN-ONE: one","dependencies":[],"acceptance":["sh check.sh"]},
 {"id":"two","title":"Two","description":"TOKEN-TWO: two","dependencies":["one"],"acceptance":["sh check.sh"]},
 {"id":"three","title":"Three","description":"TOKEN-THREE: three","dependencies":["two"]}]}`
			f := &fakeModel{plan: plan}
			fe := newFenceEnv(t, mode, f, map[string][]byte{"tools/swap*": swap})
			swapper := "setsid tools/swap " + fe.gitDir + " </dev/null >/dev/null 2>&1 &\nsleep 0.3\n"
			var escapes []string
			for _, p := range hostile.All {
				escapes = append(escapes, "( "+p.For(filepath.Join(fe.markers, p.Name), fe.gitDir)+" ) >/dev/null 2>&1")
			}
			look := "echo three-look; test -d .git && ! test -L .git && echo plain-git-dir; git config --list; ls -A; git status --short"
			f.setScript(plan, []scriptTask{
				{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "check.sh", "content": swapper + "test -L .git\n"})}},
				{token: "TOKEN-TWO", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "check.sh", "content": strings.Join(escapes, "\n") + "\n" + swapper + "true\n"})}},
				{token: "TOKEN-THREE", steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": look}),
					llmtest.Call("write_file", map[string]any{"path": "three.txt", "content": "3\n"}),
				}},
			})
			out, stderr, code, _ := fe.runFence(1, "")
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			ends := taskEnds(t, out)
			for _, id := range []string{"one", "two", "three"} {
				fe.assertHonest(ends, id, 2)
			}
			seen := fe.toolResult("three-look")
			t.Logf("the third task's copy:\n%s", seen)
			if !strings.Contains(seen, "plain-git-dir") {
				t.Errorf("the third task's copy has no plain .git:\n%s", seen)
			}
			for _, bad := range []string{"filter.", "fsmonitor", "hookspath", "sshcommand", "include.", ".gitmodules", "pipe", ".git-swapped"} {
				if strings.Contains(strings.ToLower(seen), bad) {
					t.Errorf("the third task's copy has %s:\n%s", bad, seen)
				}
			}
			fe.assertIntact()
		})
	}
}
