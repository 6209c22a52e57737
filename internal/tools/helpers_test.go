package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// newTestWorkspace creates a workspace in a temp dir holding files
// (slash-separated relative path → content).
func newTestWorkspace(t *testing.T, files map[string]string) *Workspace {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		writeTestFile(t, filepath.Join(root, filepath.FromSlash(rel)), content)
	}
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatalf("NewWorkspace: %v", err)
	}
	return ws
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run calls the named tool of the full coding set with args marshalled to
// JSON (a string is sent as is) and fails the test on a Go error.
func run(t *testing.T, ws *Workspace, name string, args any) Result {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	res, err := Call(t.Context(), Coding(ws, Options{}), name, raw)
	if err != nil {
		t.Fatalf("%s %s: unexpected Go error: %v", name, raw, err)
	}
	return res
}

type args = map[string]any

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
