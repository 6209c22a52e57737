//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint/hostile"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// Every escape of the audit, written by the agent with shell_exec from its
// attempt's copy, one task each, one after another (their copies recycled
// through the pool), then the run ends: no marker on the host, the user's
// repository intact, every task completed but the one whose .gitmodules
// git fsck would reject, which fails with that named.
func TestE2EHostileCopiesRunNothingOnTheHost(t *testing.T) {
	hostileCopies(t, localRuntime)
}

// The same from inside the attempts' containers.
func TestE2EDockerHostileCopiesRunNothingOnTheHost(t *testing.T) {
	dockerE2E(t)
	hostileCopies(t, dockerRuntime)
}

// The same with planagent run as a user other than root (CI runs as
// root): a directory the agent makes unreadable hides nothing from the
// host's walk, and a repository in it runs nothing on the host.
func TestE2EDockerHostileCopiesAsAUser(t *testing.T) {
	dockerE2E(t)
	// The test reads the user's repository as root: git must not refuse
	// it for its owner.
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "safe.directory")
	t.Setenv("GIT_CONFIG_VALUE_0", "*")
	hostileCopies(t, dockerRuntimeAsUser)
}

// dockerRuntimeAsUser is dockerRuntime with planagent run as user nobody
// (in the Docker socket's group) when the test runs as root, in a directory
// that user can enter.
func dockerRuntimeAsUser(t *testing.T, f *fakeModel) *runEnv {
	cli := dockerE2E(t)
	e := newDockerRunEnv(t, f)
	if os.Getuid() == 0 {
		dir, err := os.MkdirTemp("", "planagent-nobody-") //nolint:usetesting // t.TempDir's parent is 0700: user nobody could not enter it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		for _, d := range []string{dir, binDir} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		sock := strings.TrimPrefix(os.Getenv("DOCKER_HOST"), "unix://")
		if sock == "" {
			sock = "/var/run/docker.sock"
		}
		var st syscall.Stat_t
		if err := syscall.Stat(sock, &st); err != nil {
			t.Fatalf("the Docker socket %s: %v", sock, err)
		}
		e.dir, e.volumes = dir, filepath.Join(dir, "volumes")
		e.cred = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{st.Gid}}
	}
	e.env = append(e.env, "CODEAGENT_RUNTIME=docker")
	e.attempts = watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes, layout.LabelRole+"=attempt")
	t.Cleanup(func() { assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes) })
	return e
}

func hostileCopies(t *testing.T, rt e2eRuntime) {
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			markers := t.TempDir()
			// A program run on the host as planagent's user must be able
			// to leave its marker.
			for d := markers; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			var tasks []map[string]any
			var scripts []scriptTask
			refused := map[string]string{} // task → what its error says
			// The git directory must be known before the plan: made first.
			f := &fakeModel{}
			e := rt(t, f)
			var ws, gitDir string
			if mode == "git" {
				ws = gitWorkspace(t, e)
				writeFile(t, ws, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
				gitDir = filepath.Join(ws, ".git")
			} else {
				ws = filepath.Join(e.dir, "plain")
				writeFile(t, ws, "notes.txt", "one\ntwo\nthree\n")
				gitDir = checkpoint.ShadowDir(filepath.Join(e.volumes, "checkpoints"), ws)
			}
			for i, p := range hostile.All {
				id := fmt.Sprintf("h%02d", i)
				tok := "TOKEN-" + strings.ToUpper(id)
				tasks = append(tasks, map[string]any{"id": id, "title": p.Name, "description": tok + ": " + p.Name, "dependencies": []string{}})
				marker := filepath.Join(markers, p.Name)
				scripts = append(scripts, scriptTask{token: tok, steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": p.For(marker, gitDir) + " && echo planted-" + id}),
					llmtest.Call("write_file", map[string]any{"path": "done/" + id + ".txt", "content": p.Name + "\n"}),
				}})
				if r := p.Refusal(); r != "" {
					refused[id] = r
				}
			}
			plan, _ := json.Marshal(map[string]any{"title": "Hostile", "overview": "x", "tasks": tasks})
			f.setScript(string(plan), scripts)
			var hook, config string
			if mode == "git" {
				hook, config = readFile(t, gitDir, "hooks/pre-commit"), readFile(t, gitDir, "config")
			}

			out, stderr, code := e.run("run", "--yes", "--json", "--workspace", ws, "--parallel", "1", "--max-retries", "0", "hostile")
			if code != 1 {
				t.Errorf("exit %d, want 1 (the refused .gitmodules)\n%s", code, stderr)
			}
			for i, p := range hostile.All {
				if !strings.Contains(e.toolResult(fmt.Sprintf("planted-h%02d", i)), "exit code: 0") {
					t.Errorf("payload %s was not planted", p.Name)
				}
			}
			ended := 0
			for _, ev := range jsonEvents(t, out) {
				if ev["type"] != "task_end" {
					continue
				}
				ended++
				id, _ := ev["task_id"].(string)
				status, _ := ev["status"].(string)
				switch {
				case refused[id] != "" && (status != "failed" || !strings.Contains(fmt.Sprint(ev), refused[id])):
					t.Errorf("task %s: %v, want failed saying %q", id, ev, refused[id])
				case refused[id] == "" && status != "completed":
					t.Errorf("task %s: %v, want completed", id, ev)
				}
			}
			if ended != len(hostile.All) {
				t.Errorf("%d task_end events, want %d", ended, len(hostile.All))
			}
			entries, _ := os.ReadDir(markers)
			for _, m := range entries {
				t.Errorf("a program of the agent's ran on the host: marker %s", m.Name())
			}
			if mode == "git" {
				if got := readFile(t, gitDir, "hooks/pre-commit"); got != hook {
					t.Errorf("the user's hook changed: %q", got)
				}
				if got := readFile(t, gitDir, "config"); got != config {
					t.Errorf("the user's config changed:\n%s", got)
				}
				if b := gitIn(t, ws, "symbolic-ref", "HEAD"); b != "refs/heads/main" {
					t.Errorf("HEAD = %s, want refs/heads/main", b)
				}
				if st := gitIn(t, ws, "status", "--porcelain"); st != "" {
					t.Errorf("the workspace is not clean: %q", st)
				}
			}
			if out, err := exec.Command("git", "--git-dir="+gitDir, "fsck", "--full", "--strict", "--no-dangling").CombinedOutput(); err != nil {
				t.Errorf("git fsck --full --strict: %v\n%s", err, out)
			}
			if mode == "git" {
				// The refused tasks' objects never entered the user's
				// repository, and the moved ones are all reachable.
				out, err := exec.Command("git", "--git-dir="+gitDir, "fsck", "--unreachable", "--no-reflogs").Output()
				if err != nil || strings.TrimSpace(string(out)) != "" {
					t.Errorf("objects of the run left unreachable in the user's repository (%v):\n%s", err, out)
				}
			}
			if got := readFile(t, ws, "done/h00.txt"); got != hostile.All[0].Name+"\n" {
				t.Errorf("the first task's file: %q", got)
			}
			for _, p := range []string{".gitmodules", "sub/.git", "sub2/.git", "pipe"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s reached the workspace", p)
				}
			}
		})
	}
}
