package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The user-level file (XDG) sits under the project's ./codeagent.yaml, and
// every value names the file and line it came from.
func TestLoadUserFileUnderProjectFile(t *testing.T) {
	xdg := t.TempDir()
	user := writeFileIn(t, filepath.Join(xdg, "codeagent"), "config.yaml", "api_key: sk-user-0123456789abcd\nmodel: user-model\nretries: 9\n")
	dir := t.TempDir()
	t.Chdir(dir)
	project := writeFile(t, dir, DefaultFile, "# project\nmodel: project-model\n")
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": xdg, "HOME": "/nonexistent"}},
		{"HOME/.config", map[string]string{"HOME": filepath.Dir(xdg) + "/" + filepath.Base(xdg) + "-home"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "HOME/.config" {
				home := tt.env["HOME"]
				writeFileIn(t, filepath.Join(home, ".config", "codeagent"), "config.yaml", "api_key: sk-user-0123456789abcd\nmodel: user-model\nretries: 9\n")
				user = filepath.Join(home, ".config", "codeagent", "config.yaml")
			}
			l, err := Load(Options{Getenv: env(tt.env)})
			if err != nil {
				t.Fatal(err)
			}
			if l.Model != "project-model" || l.Retries != 9 || l.APIKey != "sk-user-0123456789abcd" {
				t.Errorf("model %q retries %d key %q: want the project's model over the user's, the user's retries and key", l.Model, l.Retries, l.APIKey)
			}
			want := map[string]string{
				"model":   "file (" + project + ":2)",
				"retries": "file (" + user + ":3)",
				"api_key": "file (" + user + ":1)",
			}
			for key, src := range want {
				if got := string(l.Sources[key]); got != src {
					t.Errorf("source of %s = %q, want %q", key, got, src)
				}
			}
			var buf bytes.Buffer
			if err := l.Print(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), "user config: "+user+"\nconfig file: "+project+"\n") || strings.Contains(buf.String(), "0123456789abcd") {
				t.Errorf("config output:\n%s", buf.String())
			}
		})
	}
	// A broken user file is an error naming it and the line.
	bad := writeFile(t, t.TempDir(), "config.yaml", "model: [\n")
	if _, err := Load(Options{UserFile: bad, Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("broken user file: %v", err)
	}
	// No user file: nothing read, no error.
	if l, err := Load(Options{Getenv: env(map[string]string{"HOME": t.TempDir()})}); err != nil || l.UserFile != "" {
		t.Errorf("no user file: %v %q", err, l.UserFile)
	}
}

func writeFileIn(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, content)
}
