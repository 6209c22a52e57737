package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/repomap"
)

func runRepomapCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	f := &cmdutil.Factory{
		IO:     cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, IsTerminal: func() bool { return false }},
		Getenv: func(string) string { return "" },
	}
	code := cmdutil.Main(f, NewCmdRoot(f), append([]string{"repomap"}, args...))
	return code, out.String(), errb.String()
}

func TestRepomapCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "go.mod"), "module example.com/p\n")
	writeFile(t, filepath.Join(project, "lib", "lib.go"), "package lib\n\n// Parse parses.\nfunc Parse(s string) (int, error) { return 0, nil }\n")
	writeFile(t, filepath.Join(project, "main.go"), "package main\n\nimport \"example.com/p/lib\"\n\nfunc main() { lib.Parse(\"1\") }\n")
	writeFile(t, filepath.Join(project, "lib", "lib_test.go"), "package lib\n\nfunc TestParseLib() { Parse(\"2\") }\n")
	volumes := t.TempDir()
	if err := os.MkdirAll(filepath.Join(volumes, "context"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		wantErr  string
	}{
		{"path argument", []string{project, "--tokens", "200"}, 0,
			[]string{"lib/lib.go:\n  func Parse(s string) (int, error)\n", "main.go:\n  func main()\n"}, ""},
		{"workspace from flags", []string{"--volumes", volumes, "--workspace", project}, 0, []string{"func Parse"}, ""},
		{"boost", []string{project, "--boost", "fix main.go"}, 0, []string{"main.go:\n  func main()\nlib/lib.go"}, ""},
		{"tests asked for", []string{project, "--tests"}, 0, []string{"lib/lib_test.go:\n  func TestParseLib()\n"}, ""},
		{"not a directory", []string{filepath.Join(project, "main.go")}, cmdutil.ExitUsage, nil, "is not a directory"},
		{"missing", []string{filepath.Join(project, "nope")}, cmdutil.ExitUsage, nil, "is not a directory"},
		{"bad tokens", []string{project, "--tokens", "0"}, cmdutil.ExitUsage, nil, "positive token budget"},
		{"two paths", []string{project, project}, cmdutil.ExitUsage, nil, "accepts at most 1 arg"},
	}
	if _, out, _ := runRepomapCmd(t, project); strings.Contains(out, "lib_test.go") {
		t.Errorf("test files mapped without --tests:\n%s", out)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runRepomapCmd(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.wantCode, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr lacks %q: %s", tt.wantErr, errOut)
			}
		})
	}
	caches, _ := filepath.Glob(filepath.Join(volumes, "context", ".repomap-cache", "repomap-*.bin"))
	if len(caches) != 1 {
		t.Errorf("cache files in <volumes>/context/.repomap-cache: %v, want one", caches)
	}
}

// Inside a project without a volumes tree, repomap maps the project.
func TestRepomapDefaultsToTheCurrentDirectory(t *testing.T) {
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "main.go"), "package main\n\nfunc Serve() {}\n\nfunc main() { Serve() }\n")
	t.Chdir(project)
	code, out, errOut := runRepomapCmd(t)
	if code != 0 || !strings.Contains(out, "main.go:\n  func Serve()") {
		t.Errorf("repomap in a project: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(project, "volumes")); !os.IsNotExist(err) {
		t.Errorf("repomap made a volumes dir in the project: %v", err)
	}
}

func TestRepomapJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "a.py"), "class Alpha:\n    \"\"\"First.\"\"\"\n    def run(self) -> int:\n        return 1\n")
	writeFile(t, filepath.Join(project, "b.py"), "from a import Alpha\nAlpha().run()\n")
	code, out, errOut := runRepomapCmd(t, project, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// JSON as written: "-> int", not "-\u003e int".
	if !strings.Contains(out, "def run(self) -> int") {
		t.Errorf("the signature is not as written:\n%s", out)
	}
	var m repomap.Map
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not a JSON map: %v\n%s", err, out)
	}
	if len(m.Files) != 2 || m.Files[0].Path != "a.py" || m.Text == "" || m.Tokens == 0 {
		t.Fatalf("unexpected map: %+v", m)
	}
	alpha := m.Files[0].Symbols[0]
	if alpha.Kind != repomap.KindType || alpha.Name != "Alpha" || alpha.Doc != "First." || alpha.StartLine != 1 || alpha.EndLine != 4 {
		t.Errorf("Alpha = %+v", alpha)
	}
	if imps := m.Files[1].Imports; len(imps) != 1 || imps[0] != "a.py" {
		t.Errorf("b.py imports = %v, want [a.py]", imps)
	}
}
