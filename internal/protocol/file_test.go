package protocol

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name     string
		existing string // content already at the path, if any
		data     string
		perm     os.FileMode
	}{
		{name: "new file", data: "hello\n", perm: 0o644},
		{name: "replaces existing", existing: "old content that is longer", data: "new", perm: 0o600},
		{name: "empty data", data: "", perm: 0o640},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "t1.md")
			if tt.existing != "" {
				if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFileAtomic(path, []byte(tt.data), tt.perm); err != nil {
				t.Fatalf("WriteFileAtomic: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tt.data {
				t.Fatalf("content = %q, %v; want %q", got, err, tt.data)
			}
			info, err := os.Stat(path)
			if err != nil || info.Mode().Perm() != tt.perm {
				t.Fatalf("mode = %v, %v; want %v", info.Mode().Perm(), err, tt.perm)
			}
			assertOnlyFiles(t, dir, "t1.md")
		})
	}
}

func TestWriteFileAtomicFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should go makes the rename fail after the
	// temporary file was written.
	target := filepath.Join(dir, "t1.md")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(target, []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "rename temporary file into place") {
		t.Fatalf("WriteFileAtomic over a directory = %v, want a rename error", err)
	}
	assertOnlyFiles(t, dir, "t1.md")

	err = WriteFileAtomic(filepath.Join(dir, "missing", "t1.md"), []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFileAtomic into a missing dir = %v, want fs.ErrNotExist", err)
	}
}

// A watcher sees the final name only with its complete content; every other
// name it sees is a temp name.
func TestWriteFileAtomicUnderWatcher(t *testing.T) {
	dir := t.TempDir()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t1.md")
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: several write syscalls
	if err := WriteFileAtomic(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				t.Fatal("watcher closed")
			}
			if IsTempName(ev.Name) {
				continue
			}
			if ev.Name != path || !ev.Has(fsnotify.Create) {
				t.Fatalf("unexpected event %v before the final CREATE", ev)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("at CREATE the file holds %d bytes (%v), want %d", len(got), err, len(data))
			}
			return
		case err := <-w.Errors:
			t.Fatalf("watcher: %v", err)
		case <-deadline:
			t.Fatal("no CREATE event for the final name within 10s")
		}
	}
}

func TestReadWriteCommandAndReport(t *testing.T) {
	dir := t.TempDir()
	c := fullCommand()
	cpath := filepath.Join(dir, c.ID+".md")
	if err := WriteCommand(cpath, c); err != nil {
		t.Fatalf("WriteCommand: %v", err)
	}
	gotC, err := ReadCommand(cpath)
	if err != nil || !reflect.DeepEqual(gotC, c) {
		t.Fatalf("ReadCommand = %#v, %v; want %#v", gotC, err, c)
	}

	r := fullReport()
	rpath := filepath.Join(dir, r.ID+".report.md")
	if err := WriteReport(rpath, r); err == nil || !strings.Contains(err.Error(), "does not match the file name") {
		t.Fatalf("WriteReport under the wrong name = %v, want a name mismatch", err)
	}
	rpath = filepath.Join(dir, "reports-"+r.ID)
	if err := os.Mkdir(rpath, 0o755); err != nil {
		t.Fatal(err)
	}
	rpath = filepath.Join(rpath, r.ID+".md")
	if err := WriteReport(rpath, r); err != nil {
		t.Fatalf("WriteReport: %v", err)
	}
	gotR, err := ReadReport(rpath)
	if err != nil || !reflect.DeepEqual(gotR, r) {
		t.Fatalf("ReadReport = %#v, %v; want %#v", gotR, err, r)
	}
	assertOnlyFiles(t, dir, "reports-"+r.ID, c.ID+".md")
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "t1.md")
	data := append([]byte("---\nid: t1\nrun_id: r1\nattempt: 1\ntitle: x\n---\n"), bytes.Repeat([]byte("x"), 2*MaxFileSize)...)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		read  func() error
		check func(error) bool
	}{
		{"oversized command", func() error { _, err := ReadCommand(big); return err }, func(err error) bool {
			var pe *ParseError
			return errors.As(err, &pe) && pe.File == big && strings.Contains(pe.Problem, "1 MiB")
		}},
		{"missing command", func() error { _, err := ReadCommand(filepath.Join(dir, "nope.md")); return err }, func(err error) bool {
			return errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "read command")
		}},
		{"missing report", func() error { _, err := ReadReport(filepath.Join(dir, "nope.md")); return err }, func(err error) bool {
			return errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "read report")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.read(); !tt.check(err) {
				t.Fatalf("error = %v", err)
			}
		})
	}
}

func assertOnlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s holds %q, want %q (temporary files left behind?)", dir, got, want)
	}
}
