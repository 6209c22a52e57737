package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeTestFile(t, file, "x")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	tests := []struct {
		name, root, wantRoot, wantErr string
	}{
		{"dir", dir, real, ""},
		{"symlinked dir is resolved", link, real, ""},
		{"missing", filepath.Join(dir, "nope"), "", "no such file"},
		{"file", file, "", "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := NewWorkspace(tt.root)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ws.Root() != tt.wantRoot {
				t.Errorf("Root() = %q, want %q", ws.Root(), tt.wantRoot)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{"src/a.go": "package a", "docs/x.md": "x"})
	root := ws.Root()
	outside := t.TempDir()
	writeTestFile(t, filepath.Join(outside, "secret"), "s")
	mustSymlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "secretlink"))
	mustSymlink(t, outside, filepath.Join(root, "outdir"))
	mustSymlink(t, filepath.Join(outside, "missing"), filepath.Join(root, "dangling"))
	mustSymlink(t, "src", filepath.Join(root, "srclink"))
	mustSymlink(t, "../"+filepath.Base(root)+"/docs", filepath.Join(root, "docslink"))
	mustSymlink(t, "loop2", filepath.Join(root, "loop1"))
	mustSymlink(t, "loop1", filepath.Join(root, "loop2"))

	tests := []struct {
		name, path, want, wantErr string
	}{
		{"relative file", "src/a.go", filepath.Join(root, "src/a.go"), ""},
		{"root dot", ".", root, ""},
		{"new file", "new/dir/file.txt", filepath.Join(root, "new/dir/file.txt"), ""},
		{"dotdot inside", "src/../docs/x.md", filepath.Join(root, "docs/x.md"), ""},
		{"absolute inside", filepath.Join(root, "src/a.go"), filepath.Join(root, "src/a.go"), ""},
		{"symlink inside", "srclink/a.go", filepath.Join(root, "src/a.go"), ""},
		{"symlink out and back in", "docslink/x.md", filepath.Join(root, "docs/x.md"), ""},
		{"empty", "", "", "path is empty"},
		{"dotdot escape", "../x", "", `path "../x" is outside the workspace ` + root},
		{"deep dotdot escape", "src/../../x", "", "is outside the workspace"},
		{"absolute outside", "/etc/passwd", "", "is outside the workspace"},
		{"symlinked file outside", "secretlink", "", "is outside the workspace"},
		{"symlinked dir outside", "outdir/secret", "", "is outside the workspace"},
		{"new file in symlinked dir outside", "outdir/new.txt", "", "is outside the workspace"},
		{"dangling symlink outside", "dangling", "", "is outside the workspace"},
		{"symlink loop", "loop1/x", "", "too many levels"},
		{"NUL byte", "a\x00b", "", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) = %q, %v; want error containing %q", tt.path, got, err, tt.wantErr)
				}
				outside := strings.Contains(tt.wantErr, "outside")
				if errors.Is(err, ErrOutsideWorkspace) != outside {
					t.Errorf("errors.Is(%v, ErrOutsideWorkspace) = %v, want %v", err, !outside, outside)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.path, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestRel(t *testing.T) {
	ws := newTestWorkspace(t, nil)
	tests := []struct{ abs, want string }{
		{ws.Root(), "."},
		{filepath.Join(ws.Root(), "a", "b.go"), "a/b.go"},
		{"/elsewhere/x", "/elsewhere/x"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := ws.Rel(tt.abs); got != tt.want {
				t.Errorf("Rel(%q) = %q, want %q", tt.abs, got, tt.want)
			}
		})
	}
}

// FuzzResolve checks the one invariant that matters: whatever Resolve
// accepts lies inside the root, also after following every symlink that
// exists on the way.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "sub/../../x", "/etc/passwd", "out/x", "in/../../", "dangling/x",
		"./sub//x", "sub/link/..", "in/in/in", "..", "/", "sub/\x00"} {
		f.Add(s)
	}
	root := f.TempDir()
	outside := f.TempDir()
	for _, l := range [][2]string{{outside, "out"}, {"sub", "in"}, {"/nonexistent/x", "dangling"}, {"..", "sub/link"}} {
		if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			f.Fatal(err)
		}
	}
	ws, err := NewWorkspace(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		abs, err := ws.Resolve(p)
		if err != nil {
			return
		}
		if abs != ws.Root() && !strings.HasPrefix(abs, ws.Root()+string(filepath.Separator)) {
			t.Fatalf("Resolve(%q) = %q, outside root %q", p, abs, ws.Root())
		}
		// The existing part of the result must really be inside, too.
		existing := abs
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil {
			return // a loop the kernel would refuse as well
		}
		if real != ws.Root() && !strings.HasPrefix(real, ws.Root()+string(filepath.Separator)) {
			t.Fatalf("Resolve(%q) = %q, which really is %q, outside root %q", p, abs, real, ws.Root())
		}
	})
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
