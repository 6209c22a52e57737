//go:build e2e

package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// With the local runtime the model's shell runs as the operator's user. It
// goes looking for the API key in the environ of its parent (codingagent)
// and grandparent (planagent) and base64-encodes what it finds, which the
// output scrubbing cannot recognise. Neither process may give it the key:
// both are non-dumpable (so /proc/<pid>/environ is root's), and
// codingagent gets the key on a pipe, not in its environment. Run as root,
// the test runs planagent as nobody: root reads any /proc file.
func TestE2ELocalKeyOutOfTheModelsReach(t *testing.T) {
	hunt := `p=$(awk '{print $4}' /proc/$PPID/stat); for x in $PPID $p; do echo "pid $x"; base64 -w0 /proc/$x/environ; echo; done; echo searched`
	plan := `{"title":"Hunt","overview":"x","tasks":[{"id":"hunt","description":"TOKEN-HUNT","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-HUNT", steps: []llmtest.ToolCall{
		llmtest.Call("shell_exec", map[string]any{"command": hunt})}}}}
	e := newRunEnv(t, f)
	e.key = "sk-local-key-0123456789-HUNTED"
	cmd := e.command("run", "--yes", "--runtime", "local", "hunt the key")
	if os.Getuid() == 0 {
		dir, err := os.MkdirTemp("", "planagent-nobody-") //nolint:usetesting // a directory user nobody can enter: t.TempDir's parent is 0700
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		for _, d := range []string{dir, binDir} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		e.dir, e.volumes = dir, filepath.Join(dir, "volumes")
		cmd = e.command("run", "--yes", "--runtime", "local", "hunt the key")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Env = append(cmd.Env, "HOME="+dir)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("planagent: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	var results strings.Builder
	for _, req := range e.srv.Requests() {
		for _, m := range req.Messages {
			results.WriteString(m.Content + "\n")
		}
	}
	seen := results.String()
	if !strings.Contains(seen, "searched") || !strings.Contains(seen, "pid ") {
		t.Fatalf("the hunting command did not run; the model saw:\n%s", seen)
	}
	// Whatever the model got, decoded: not the key.
	for _, blob := range regexp.MustCompile(`[A-Za-z0-9+/=]{16,}`).FindAllString(seen, -1) {
		if b, err := base64.StdEncoding.DecodeString(blob); err == nil && bytes.Contains(b, []byte(e.key)) {
			t.Fatalf("the model got the API key base64-encoded from a /proc environ")
		}
	}
	if strings.Contains(seen, e.key) {
		t.Fatal("the model got the API key")
	}
	assertNoKey(t, e.volumes, e.key)
}
