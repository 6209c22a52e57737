package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/codeagent/codeagent/internal/projectdoc"
)

const disabled = "---\nenabled: false\n---\nplaceholder structure\n"

// testTemplates is a small template tree like the shipped one.
func testTemplates() fstest.MapFS {
	return fstest.MapFS{
		"global/b-tools.md":     {Data: []byte("---\ntitle: Tools\n---\nUse the tools.\n")},
		"global/a-standards.md": {Data: []byte("Write good code.\n")},
		"global/notes.txt":      {Data: []byte("not markdown")},
		"project/overview.md":   {Data: []byte("---\nenabled: true\n---\nTemplate project.\n")},
		"task/task-context.md":  {Data: []byte("Template task.\n")},
	}
}

// writeTree creates files (slash paths relative to dir) with their content.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var headingRE = regexp.MustCompile(`(?m)^## \[.*$`)

func TestCombine(t *testing.T) {
	tests := []struct {
		name      string
		templates fstest.MapFS      // nil = testTemplates()
		runtime   map[string]string // files of the runtime dir; nil = no runtime dir at all
		taskID    string
		want      []string // headings in order
		wantText  []string // substrings the output must contain
		wantNot   []string // substrings the output must not contain
		wantErr   string
	}{
		{
			name: "template fallback without runtime dir",
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] overview.md (template)",
				"## [task] task-context.md (template)",
			},
			wantText: []string{"Write good code.", "Use the tools.", "Template project.", "Template task."},
			wantNot:  []string{"title: Tools", "not markdown", "enabled: true"},
		},
		{
			name:   "runtime overrides templates",
			taskID: "t1",
			runtime: map[string]string{
				"project/project-overview.md": "---\ntitle: Overview\n---\nRuntime project.\n",
				"task/t1/task-context.md":     "Runtime task t1.\n",
				"task/t2/task-context.md":     "Runtime task t2.\n",
			},
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] project-overview.md (runtime)",
				"## [task] task-context.md (runtime)",
			},
			wantText: []string{"Runtime project.", "Runtime task t1."},
			wantNot:  []string{"Template project.", "Template task.", "t2", "title: Overview"},
		},
		{
			name:   "runtime task dir missing falls back to the template",
			taskID: "t9",
			runtime: map[string]string{
				"project/overview.md":     "Runtime project.\n",
				"task/t1/task-context.md": "Runtime task t1.\n",
			},
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] overview.md (runtime)",
				"## [task] task-context.md (template)",
			},
			wantText: []string{"Template task."},
		},
		{
			name: "no task id uses the template task layer",
			runtime: map[string]string{
				"task/t1/task-context.md": "Runtime task t1.\n",
			},
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] overview.md (template)",
				"## [task] task-context.md (template)",
			},
		},
		{
			name: "enabled false skipped in templates",
			templates: fstest.MapFS{
				"global/a.md":          {Data: []byte(disabled)},
				"global/b.md":          {Data: []byte("Global b.\n")},
				"project/overview.md":  {Data: []byte(disabled)},
				"task/task-context.md": {Data: []byte(disabled)},
			},
			want:    []string{"## [global] b.md (template)"},
			wantNot: []string{"placeholder structure"},
		},
		{
			name:   "enabled false skipped in runtime, enabled sibling kept",
			taskID: "t1",
			runtime: map[string]string{
				"project/a-old.md":      disabled,
				"project/b-overview.md": "Runtime project.\n",
				"task/t1/notes.md":      disabled,
			},
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] b-overview.md (runtime)",
				"## [task] task-context.md (template)",
			},
			wantNot: []string{"placeholder structure"},
		},
		{
			name: "empty runtime project dir falls back",
			runtime: map[string]string{
				"project/":                     "",
				"project/readme.txt":           "not markdown",
				"project/.overview.md.tmp-123": "half written",
				"project/sub/deeper.md":        "in a subdirectory",
			},
			want: []string{
				"## [global] a-standards.md (template)",
				"## [global] b-tools.md (template)",
				"## [project] overview.md (template)",
				"## [task] task-context.md (template)",
			},
			wantNot: []string{"half written", "in a subdirectory"},
		},
		{
			name: "order: layers global, project, task; files by name",
			templates: fstest.MapFS{
				"task/z.md":    {Data: []byte("task z")},
				"task/a.md":    {Data: []byte("task a")},
				"project/m.md": {Data: []byte("project m")},
				"global/2.md":  {Data: []byte("global 2")},
				"global/10.md": {Data: []byte("global 10")},
				"global/B.md":  {Data: []byte("global B")},
				"global/a.md":  {Data: []byte("global a")},
			},
			want: []string{
				"## [global] 10.md (template)",
				"## [global] 2.md (template)",
				"## [global] B.md (template)",
				"## [global] a.md (template)",
				"## [project] m.md (template)",
				"## [task] a.md (template)",
				"## [task] z.md (template)",
			},
		},
		{
			name:      "missing directories give empty layers",
			templates: fstest.MapFS{"project/p.md": {Data: []byte("only project")}},
			runtime:   map[string]string{"unrelated/x.md": "x"},
			taskID:    "t1",
			want:      []string{"## [project] p.md (template)"},
		},
		{
			name:      "everything missing gives empty output",
			templates: fstest.MapFS{},
			want:      nil,
		},
		{
			name:    "invalid task id refused",
			taskID:  "../../etc",
			runtime: map[string]string{},
			wantErr: `task id "../../etc" starts with '.'`,
		},
		{
			name:    "task id with a slash refused",
			taskID:  "t1/../../x",
			runtime: map[string]string{},
			wantErr: "task id",
		},
		{
			name:    "unterminated front matter is an error naming the file",
			runtime: map[string]string{"project/broken.md": "---\nenabled: false\nno end\n"},
			wantErr: "context file broken.md in ",
		},
		{
			name:    "non-boolean enabled is an error",
			runtime: map[string]string{"project/odd.md": "---\nenabled: maybe\n---\nx\n"},
			wantErr: "odd.md",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{TaskID: tt.taskID, Templates: testTemplates()}
			if tt.templates != nil {
				opts.Templates = tt.templates
			}
			if tt.runtime != nil {
				opts.RuntimeDir = t.TempDir()
				writeTree(t, opts.RuntimeDir, tt.runtime)
			} else {
				opts.RuntimeDir = filepath.Join(t.TempDir(), "does-not-exist")
			}
			got, err := Combine(opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Combine error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Combine: %v", err)
			}
			headings := headingRE.FindAllString(got, -1)
			if strings.Join(headings, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("headings:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(headings, "\n"), strings.Join(tt.want, "\n"), got)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(got, s) {
					t.Errorf("output contains %q:\n%s", s, got)
				}
			}
			again, err := Combine(opts)
			if err != nil || again != got {
				t.Errorf("second Combine differs (err %v): output is not deterministic", err)
			}
		})
	}
}

func TestCombineExactOutput(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"project/project-overview.md": "---\nenabled: true\n---\n\n### Goal\n\nShip it.\n\n",
		"task/t1/task-context.md":     "\ufeff### Task\r\n\r\nDo t1.\r\n",
	})
	got, err := Combine(Options{TaskID: "t1", RuntimeDir: dir, Templates: fstest.MapFS{
		"global/coding-standards.md": {Data: []byte("---\ntitle: x\n---\nRead before you edit.\n")},
		"global/empty.md":            {Data: []byte("---\n---\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "## [global] coding-standards.md (template)\n\nRead before you edit.\n" +
		"\n## [global] empty.md (template)\n\n" +
		"\n## [project] project-overview.md (runtime)\n\n### Goal\n\nShip it.\n" +
		"\n## [task] task-context.md (runtime)\n\n### Task\r\n\r\nDo t1.\n"
	if got != want {
		t.Fatalf("Combine =\n%q\nwant\n%q", got, want)
	}
}

// The shipped templates: both global files are used, the project and task
// templates are disabled; the embedded copy equals the directory on disk
// (what `--templates DIR` reads).
func TestShippedTemplates(t *testing.T) {
	embedded, err := Combine(Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"## [global] coding-standards.md (template)",
		"## [global] tool-usage.md (template)",
	}
	if got := headingRE.FindAllString(embedded, -1); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("embedded headings = %q, want %q", got, want)
	}
	for _, s := range []string{"read_file", "edit_file", "glob", "grep", "shell_exec", "timeout_seconds", "task", "secrets"} {
		if !strings.Contains(embedded, s) {
			t.Errorf("shipped global context does not mention %q", s)
		}
	}
	if strings.Contains(embedded, "enabled:") || strings.Contains(embedded, "description:") {
		t.Errorf("front matter leaked into the output:\n%s", embedded)
	}
	fromDisk, err := Combine(Options{Templates: os.DirFS(filepath.Join("..", "..", "..", "docker", "templates"))})
	if err != nil {
		t.Fatal(err)
	}
	if fromDisk != embedded {
		t.Errorf("os.DirFS templates give a different result than the embedded ones")
	}
	for _, p := range []string{"project/project-overview.md", "task/task-context.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "docker", "templates", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if _, enabled, err := parseContextFile(data); err != nil || enabled {
			t.Errorf("%s: enabled=%v err=%v, want a disabled template", p, enabled, err)
		}
	}
}

func BenchmarkCombine(b *testing.B) {
	root := b.TempDir()
	para := strings.Repeat("Keep diffs minimal, follow the surrounding style and run the tests before you finish. ", 40)
	writeTree(b, filepath.Join(root, "templates"), map[string]string{
		"global/coding-standards.md":  "---\ntitle: Coding standards\n---\n" + para,
		"global/tool-usage.md":        "---\ntitle: Tool usage\n---\n" + para + para,
		"global/security.md":          para,
		"project/project-overview.md": disabled,
		"task/task-context.md":        disabled,
	})
	writeTree(b, filepath.Join(root, "runtime"), map[string]string{
		"project/project-overview.md":  "---\nenabled: true\n---\n### Goal\n\n" + para,
		"project/decisions.md":         para,
		"task/t7/task-context.md":      "### Task\n\n" + para,
		"task/t7/previous-attempts.md": para,
	})
	opts := Options{TaskID: "t7", RuntimeDir: filepath.Join(root, "runtime"), Templates: os.DirFS(filepath.Join(root, "templates"))}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Combine(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// The runtime layers are read with the file's type checked in the open
// itself: a FIFO or a symbolic link swapped in after the directory was
// listed is refused at once, not waited on or followed.
func TestRegularFSRefusesFIFOAndSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.md"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	fsys := regularFS{FS: os.DirFS(dir), root: dir}
	if b, err := fs.ReadFile(fsys, "ok.md"); err != nil || string(b) != "fine\n" {
		t.Fatalf("ok.md: %q, %v", b, err)
	}
	for _, name := range []string{"fifo.md", "link.md", "../ok.md"} {
		done := make(chan error, 1)
		go func() { _, err := fs.ReadFile(fsys, name); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was read", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reading %s blocks", name)
		}
	}
}

// The workspace's AGENTS.md opens the project layer, whether the project
// files come from the runtime dir or the templates; a long one is cut at
// projectdoc.MaxBytes and says so; one that cannot be read is named as
// left out, without failing the combination.
func TestCombineProjectDoc(t *testing.T) {
	tmpl := fstest.MapFS{"global/g.md": {Data: []byte("G\n")}}
	runtimeDir := t.TempDir()
	writeTree(t, runtimeDir, map[string]string{"project/project-overview.md": "OVERVIEW\n"})

	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"AGENTS.md": "Run go test ./... before finishing.\n"})
	got, err := Combine(Options{RuntimeDir: runtimeDir, Templates: tmpl, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	want := "## [global] g.md (template)\n\nG\n" +
		"\n## [project] AGENTS.md (workspace)\n\nRun go test ./... before finishing.\n" +
		"\n## [project] project-overview.md (runtime)\n\nOVERVIEW\n"
	if got != want {
		t.Errorf("Combine =\n%q\nwant\n%q", got, want)
	}
	if got, _ := Combine(Options{Templates: tmpl, Workspace: ws}); !strings.Contains(got, "## [project] AGENTS.md (workspace)") {
		t.Errorf("no AGENTS.md without a runtime dir:\n%s", got)
	}
	if got, _ := Combine(Options{RuntimeDir: runtimeDir, Templates: tmpl}); strings.Contains(got, "AGENTS.md") {
		t.Errorf("AGENTS.md without a workspace:\n%s", got)
	}

	long := t.TempDir()
	writeTree(t, long, map[string]string{"AGENTS.md": strings.Repeat("0123456789abcdef\n", 4000)})
	got, err = Combine(Options{Templates: tmpl, Workspace: long})
	if err != nil || len(got) > projectdoc.MaxBytes+1000 || !strings.Contains(got, "[AGENTS.md is 68000 bytes: only its first") {
		t.Errorf("a long AGENTS.md: %d bytes, %v:\n%.200s", len(got), err, got[max(0, len(got)-200):])
	}

	out := t.TempDir()
	writeTree(t, out, map[string]string{"secret.md": "SECRET\n"})
	linked := t.TempDir()
	if err := os.Symlink(filepath.Join(out, "secret.md"), filepath.Join(linked, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	got, err = Combine(Options{Templates: tmpl, Workspace: linked})
	if err != nil || strings.Contains(got, "SECRET") || !strings.Contains(got, "[the project's instructions are left out: ") || !strings.Contains(got, "outside the workspace: refused]") {
		t.Errorf("AGENTS.md linked out of the workspace: %v\n%s", err, got)
	}
}
