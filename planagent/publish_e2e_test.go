//go:build e2e

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// publish puts exactly the run's commits on a branch of a bare repository
// (the remote), and --pr opens a pull request through the REST API (no gh
// installed) or through gh when it is there.
func TestE2EPublish(t *testing.T) {
	plan := `{"title":"Add two files","overview":"x","tasks":[{"id":"a","title":"Write a","description":"TOKEN-A: write a.txt","dependencies":[]},{"id":"b","title":"Write b","description":"TOKEN-B: write b.txt","dependencies":["a"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-A", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}},
		{token: "TOKEN-B", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "b.txt", "content": "b\n"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	remote := filepath.Join(e.dir, "remote.git")
	gitIn(t, e.dir, "init", "-q", "--bare", remote)
	gitIn(t, ws, "remote", "add", "origin", remote)
	start := gitIn(t, ws, "rev-parse", "HEAD")
	if _, stderr, code := e.run("run", "--yes", "--workspace", ws, "add two files"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	// A PATH with git and nothing else: no gh.
	bin := t.TempDir()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "PATH="+bin)

	if _, stderr, code := e.run("publish", "--workspace", ws, "--branch", "codeagent/two-files"); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, stderr)
	}
	if got := gitIn(t, remote, "log", "--format=%s", start+"..codeagent/two-files"); got != "b: Write b\na: Write a" {
		t.Errorf("the remote branch holds\n%s\nwant the run's two commits", got)
	}
	if parent := gitIn(t, remote, "rev-parse", "codeagent/two-files~2"); parent != start {
		t.Errorf("the branch starts at %s, want the run's start %s", parent, start)
	}

	// --pr without gh and without a token: told what is needed.
	_, stderr, code := e.run("publish", "--workspace", ws, "--branch", "codeagent/two-files", "--pr", "--repo", "acme/widget")
	if code != 2 || !strings.Contains(stderr, "gh") || !strings.Contains(stderr, "GITHUB_TOKEN") {
		t.Errorf("--pr with no way to open it: exit %d\n%s", code, stderr)
	}

	// The REST API, with a token.
	var mu sync.Mutex
	var got map[string]string
	var auth, path string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		_ = json.Unmarshal(b, &got)
		auth, path = r.Header.Get("Authorization"), r.Method+" "+r.URL.Path
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"html_url":"https://github.com/acme/widget/pull/7"}`))
	}))
	defer api.Close()
	env := e.env
	e.env = append(env, "GITHUB_TOKEN=ghp-test-token", "GITHUB_API_URL="+api.URL)
	out, stderr, code := e.run("publish", "--workspace", ws, "--branch", "codeagent/two-files", "--pr", "--repo", "acme/widget")
	if code != 0 || strings.TrimSpace(out) != "https://github.com/acme/widget/pull/7" {
		t.Fatalf("publish --pr: exit %d, out %q\n%s", code, out, stderr)
	}
	mu.Lock()
	if path != "POST /repos/acme/widget/pulls" || auth != "Bearer ghp-test-token" || got["title"] != "Add two files" ||
		got["head"] != "codeagent/two-files" || got["base"] != "main" || !strings.Contains(got["body"], "| a | completed |") || !strings.Contains(got["body"], "| b | completed |") {
		t.Errorf("the API got %s %q %v", path, auth, got)
	}
	mu.Unlock()
	assertNoKey(t, e.volumes, "ghp-test-token")

	// gh, when it is installed and logged in, is used instead.
	log := filepath.Join(e.dir, "gh.log")
	gh := "#!/bin/sh\necho \"$@\" >> " + log + "\nif [ \"$1\" = pr ]; then cat >> " + log + "; echo https://github.com/acme/widget/pull/8; fi\n"
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/sh", filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"cat"} {
		if p, err := exec.LookPath(tool); err == nil {
			_ = os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	e.env = env
	_, stderr, code = e.run("publish", "--workspace", ws, "--branch", "codeagent/two-files", "--pr")
	if code != 2 || !strings.Contains(stderr, "--repo") {
		t.Errorf("a remote not on github.com without --repo: exit %d\n%s", code, stderr)
	}
	out, stderr, code = e.run("publish", "--workspace", ws, "--branch", "codeagent/two-files", "--pr", "--repo", "acme/widget", "--title", "Two files")
	if code != 0 || strings.TrimSpace(out) != "https://github.com/acme/widget/pull/8" {
		t.Fatalf("publish --pr with gh: exit %d, out %q\n%s", code, out, stderr)
	}
	calls := readFile(t, e.dir, "gh.log")
	if !strings.Contains(calls, "auth status") || !strings.Contains(calls, "pr create --repo acme/widget --head codeagent/two-files --base main --title Two files --body-file -") ||
		!strings.Contains(calls, "| b | completed |") {
		t.Errorf("gh was called:\n%s", calls)
	}
}
