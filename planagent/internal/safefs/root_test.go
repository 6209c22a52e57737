//go:build unix

package safefs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// tree is a root over a fresh volumes dir, the host dir outside it that
// links are planted to (holding precious.txt), and the root's log.
type tree struct {
	root    *Root
	vol     string
	outside string
	log     *bytes.Buffer
}

func newTree(t *testing.T) tree {
	t.Helper()
	vol, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r, err := OpenRoot(vol, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return tree{root: r, vol: vol, outside: outside, log: &log}
}

// plant makes rel (under the volumes) a link to target.
func (tr tree) plant(t *testing.T, rel, target string) {
	t.Helper()
	p := filepath.Join(tr.vol, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// untouched fails unless the outside dir holds exactly precious.txt, as it
// was.
func (tr tree) untouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(tr.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "precious.txt" {
		t.Errorf("outside dir holds %v, want only precious.txt", names)
	}
	if b, err := os.ReadFile(filepath.Join(tr.outside, "precious.txt")); err != nil || string(b) != "host" {
		t.Errorf("outside precious.txt = %q, %v", b, err)
	}
}

// isDir fails unless rel under the volumes is a real directory, not a link.
func (tr tree) isDir(t *testing.T, rel string) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(tr.vol, rel))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() {
		t.Errorf("%s is %v, want a directory", rel, fi.Mode())
	}
}

// A link in the middle of a path (context/task -> the host) is replaced by
// a directory, not followed, by every operation that makes directories; a
// warning names it.
func TestLinkInThePathIsReplacedNotFollowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *Root) error
		want string // a file that must exist after
	}{
		{"MkdirAll", func(r *Root) error { return r.MkdirAll("context/task/t3") }, "context/task/t3"},
		{"WriteFileAtomic", func(r *Root) error {
			return r.WriteFileAtomic("context/task/t3/task-context.md", []byte("x"), 0o644)
		}, "context/task/t3/task-context.md"},
		{"ReplaceFile", func(r *Root) error { return r.ReplaceFile("context/task/t3/task-context.md", []byte("x"), 0o644) },
			"context/task/t3/task-context.md"},
		{"OpenFile", func(r *Root) error {
			f, err := r.OpenFile("context/task/t3/journal", os.O_WRONLY|os.O_CREATE, 0o644)
			if err == nil {
				err = f.Close()
			}
			return err
		}, "context/task/t3/journal"},
		{"Rename to", func(r *Root) error {
			if err := r.WriteFileAtomic("reports/t3.md", []byte("x"), 0o644); err != nil {
				return err
			}
			return r.Rename("reports/t3.md", "context/task/t3/t3.md")
		}, "context/task/t3/t3.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.plant(t, "context/task", tr.outside)
			if err := os.Mkdir(filepath.Join(tr.outside, "t3"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tr.outside, "t3", "keep"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.do(tr.root); err != nil {
				t.Fatal(err)
			}
			tr.isDir(t, "context/task")
			if _, err := os.Lstat(filepath.Join(tr.vol, tc.want)); err != nil {
				t.Error(err)
			}
			if entries, _ := os.ReadDir(filepath.Join(tr.outside, "t3")); len(entries) != 1 || entries[0].Name() != "keep" {
				t.Errorf("outside t3 holds %v", entries)
			}
			if !strings.Contains(tr.log.String(), filepath.Join(tr.vol, "context", "task")) || !strings.Contains(tr.log.String(), tr.outside) {
				t.Errorf("no warning naming the link and its target:\n%s", tr.log)
			}
		})
	}
}

// A link in the middle of a path is not followed by what only reads or
// moves from it: the name does not exist, and the link stays.
func TestLinkInThePathMakesTheNameNotExist(t *testing.T) {
	tr := newTree(t)
	tr.plant(t, "context/task", tr.outside)
	if _, err := tr.root.Mode("context/task/precious.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Mode through a link: %v, want not exist", err)
	}
	if _, err := tr.root.Open("context/task/precious.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open through a link: %v, want not exist", err)
	}
	if err := tr.root.Rename("context/task/precious.txt", "runs/r/precious.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rename through a link: %v, want not exist", err)
	}
	if err := tr.root.RemoveAll("context/task/precious.txt"); err != nil {
		t.Errorf("RemoveAll through a link: %v", err)
	}
	tr.untouched(t)
	if m, err := tr.root.Mode("context/task"); err != nil || m&fs.ModeSymlink == 0 {
		t.Errorf("Mode of the link: %v, %v", m, err)
	}
}

// A link as the last component: a directory asked for replaces it; a file
// written replaces the link itself; a removal removes the link; a move
// moves the link. The target is never touched.
func TestLinkAsTheLastComponent(t *testing.T) {
	t.Run("MkdirAll", func(t *testing.T) {
		tr := newTree(t)
		tr.plant(t, "context/project", tr.outside)
		if err := tr.root.MkdirAll("context/project"); err != nil {
			t.Fatal(err)
		}
		tr.isDir(t, "context/project")
		tr.untouched(t)
	})
	t.Run("WriteFileAtomic", func(t *testing.T) {
		tr := newTree(t)
		tr.plant(t, "runs/r/state.json", filepath.Join(tr.outside, "precious.txt"))
		if err := tr.root.WriteFileAtomic("runs/r/state.json", []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(tr.vol, "runs/r/state.json")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("state.json: %v, %v", fi, err)
		}
		tr.untouched(t)
	})
	t.Run("RemoveAll", func(t *testing.T) {
		tr := newTree(t)
		tr.plant(t, "runs/r/tasks/t3", tr.outside)
		if err := tr.root.RemoveAll("runs/r/tasks/t3"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(tr.vol, "runs/r/tasks/t3")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("link left: %v", err)
		}
		tr.untouched(t)
	})
	t.Run("Rename", func(t *testing.T) {
		tr := newTree(t)
		tr.plant(t, "context/task/t3", tr.outside)
		if err := tr.root.Rename("context/task/t3", "runs/r/tasks/t3"); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(tr.vol, "runs/r/tasks/t3")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link did not move: %v, %v", fi, err)
		}
		tr.untouched(t)
	})
	t.Run("OpenFile", func(t *testing.T) {
		tr := newTree(t)
		tr.plant(t, "runs/r/journal.jsonl", filepath.Join(tr.outside, "precious.txt"))
		if _, err := tr.root.OpenFile("runs/r/journal.jsonl", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); !errors.Is(err, protocol.ErrNotRegular) {
			t.Errorf("OpenFile of a link: %v, want not regular", err)
		}
		tr.untouched(t)
	})
}

// RemoveAll of a directory removes the links in it, never what they point
// to, at any depth.
func TestRemoveAllDoesNotFollowLinksInside(t *testing.T) {
	tr := newTree(t)
	if err := tr.root.WriteFileAtomic("runs/r/tasks/t3/a/b/task-context.md", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.plant(t, "runs/r/tasks/t3/host", tr.outside)
	tr.plant(t, "runs/r/tasks/t3/a/b/file", filepath.Join(tr.outside, "precious.txt"))
	if err := syscall.Mkfifo(filepath.Join(tr.vol, "runs/r/tasks/t3/a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.root.RemoveAll("runs/r/tasks/t3"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(tr.vol, "runs/r/tasks/t3")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("t3 left: %v", err)
	}
	tr.untouched(t)
	if err := tr.root.RemoveAll("runs/r/tasks/none"); err != nil {
		t.Errorf("RemoveAll of nothing: %v", err)
	}
}

// ".." is refused in any position, and so is an absolute path not under the
// root; nothing is made.
func TestDotDotIsRefused(t *testing.T) {
	tr := newTree(t)
	rel, err := filepath.Rel(tr.vol, tr.outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", "../x", "context/../../x", rel + "/x", "context/task/..", tr.vol + "/../x", filepath.Join(tr.outside, "x")} {
		for op, do := range map[string]func() error{
			"MkdirAll":        func() error { return tr.root.MkdirAll(name) },
			"WriteFileAtomic": func() error { return tr.root.WriteFileAtomic(name, []byte("x"), 0o644) },
			"Rename":          func() error { return tr.root.Rename("a", name) },
			"RemoveAll":       func() error { return tr.root.RemoveAll(name) },
		} {
			if err := do(); !errors.Is(err, ErrOutside) {
				t.Errorf("%s(%q) = %v, want ErrOutside", op, name, err)
			}
		}
	}
	tr.untouched(t)
	if entries, _ := os.ReadDir(tr.vol); len(entries) != 0 {
		t.Errorf("volumes hold %v", entries)
	}
}

// Absolute names under the root are taken as the relative ones they are.
func TestAbsoluteNamesUnderTheRoot(t *testing.T) {
	tr := newTree(t)
	p := filepath.Join(tr.vol, "context", "project", "project-overview.md")
	if err := tr.root.WriteFileAtomic(p, []byte("overview"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := tr.root.Open("context/project/project-overview.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	fi, _ := f.Stat()
	if string(b) != "overview" || fi.Mode().Perm() != 0o640 {
		t.Errorf("read %q mode %v", b, fi.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A FIFO where a file or a directory belongs is refused (or, for a
// directory, replaced) at once: opening it would wait for a writer, deaf to
// signals.
func TestFIFOIsNotOpenedBlocking(t *testing.T) {
	tr := newTree(t)
	if err := os.MkdirAll(filepath.Join(tr.vol, "runs", "r"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"runs/r/journal.jsonl", "runs/r/tasks"} {
		if err := syscall.Mkfifo(filepath.Join(tr.vol, rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, rerr := tr.root.Open("runs/r/journal.jsonl")
		_, werr := tr.root.OpenFile("runs/r/journal.jsonl", os.O_WRONLY|os.O_CREATE, 0o644)
		done <- errors.Join(rerr, werr, tr.root.MkdirAll("runs/r/tasks/t3"))
	}()
	select {
	case err := <-done:
		if !errors.Is(err, protocol.ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("err = %v, want the FIFO refused", err)
		}
		if strings.Contains(err.Error(), "tasks") {
			t.Errorf("the FIFO where a directory belongs was not replaced: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked opening a FIFO")
	}
	tr.isDir(t, "runs/r/tasks/t3")
}

// A link replanted as fast as it is replaced ends in an error naming it,
// not a loop, and never in a write outside.
func TestWriteThroughARacingLinkStaysInside(t *testing.T) {
	tr := newTree(t)
	link := filepath.Join(tr.vol, "context", "task")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.RemoveAll(link)
			_ = os.Symlink(tr.outside, link)
		}
	}()
	for range 50 {
		_ = tr.root.ReplaceFile("context/task/t3/task-context.md", []byte("x"), 0o644)
		_ = tr.root.RemoveAll("context/task/t3")
	}
	close(stop)
	<-stopped
	tr.untouched(t)
}
