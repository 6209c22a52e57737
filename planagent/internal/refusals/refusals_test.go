package refusals

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/egress"
)

// logBuf is a logger whose lines a test reads.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// collected gathers what a Follower reads.
type collected struct{ got []Record }

func (c *collected) on(r Record) { c.got = append(c.got, r) }

func (c *collected) hosts() []string {
	var out []string
	for _, r := range c.got {
		out = append(out, r.Host)
	}
	return out
}

func refusal(i int) egress.Refusal {
	return egress.Refusal{Method: "CONNECT", Host: fmt.Sprintf("h%d.example", i), Port: 443,
		Reason: "not in the egress allow-list", Client: fmt.Sprintf("task-%d.1", i)}
}

func TestWriterRotatesAtItsLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "refusals.jsonl")
	var log logBuf
	const limit = 4096
	w, err := Create(path, limit, log.logger())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// An agent looping on a blocked download: far more than two files.
	for i := range 500 {
		w.Add(refusal(i))
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatalf("no rotated file: %v", err)
	}
	if len(cur) > limit || len(old) > limit {
		t.Errorf("files of %d and %d bytes, want at most %d each", len(cur), len(old), limit)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in the directory, want the file and its .1", len(entries))
	}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"note":"rotated at`) {
		t.Errorf("the rotated file's last line is %q, want the rotation note", last)
	}
	if !strings.Contains(string(cur), `"host":"h499.example"`) || !strings.Contains(string(cur), `"client":"task-499.1"`) {
		t.Errorf("the newest refusal is not in the current file:\n%s", cur)
	}
	if !strings.Contains(log.String(), "rotated") {
		t.Errorf("the log does not say the file was rotated:\n%s", log.String())
	}
}

func TestWriterClipsLongFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals.jsonl")
	w, err := Create(path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := refusal(1)
	r.Host = strings.Repeat("h", 1<<20)
	r.Reason = strings.Repeat("é", 1<<20)
	w.Add(r)
	_ = w.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 4096 {
		t.Errorf("a refusal with a 1 MiB host took %d bytes", len(data))
	}
	var c collected
	fo := Follow(filepath.Dir(path), "missing.jsonl", nil, c.on)
	fo.feed(data)
	if len(c.got) != 1 {
		t.Fatalf("the clipped line does not read back as one refusal: %d", len(c.got))
	}
}

func TestWriterRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "refusals.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(dir, "refusals.jsonl"), 0, nil); err == nil {
		t.Fatal("Create followed a link at the file's path")
	}
}

// followed is a volumes dir with a writer on egress/refusals.jsonl.
func followed(t *testing.T, limit int64) (root string, w *Writer) {
	t.Helper()
	root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "egress"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(root, "egress", "refusals.jsonl"), limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return root, w
}

func TestFollowerStartsAtTheEnd(t *testing.T) {
	root, w := followed(t, 0)
	w.Add(refusal(1)) // before the run: not its
	var c collected
	fo := Follow(root, "egress/refusals.jsonl", nil, c.on)
	defer fo.Close()
	w.Add(refusal(2))
	fo.Poll()
	w.Add(refusal(3))
	fo.Poll()
	fo.Poll()
	if got := strings.Join(c.hosts(), ","); got != "h2.example,h3.example" {
		t.Errorf("read %s, want h2 and h3 once each", got)
	}
	if r := c.got[0]; r.Client != "task-2.1" || r.Method != "CONNECT" || r.Port != 443 || r.Reason == "" || r.Time.IsZero() {
		t.Errorf("record %+v lacks a field", r)
	}
}

func TestFollowerReadsAFileThatAppearsLater(t *testing.T) {
	root := t.TempDir()
	var c collected
	fo := Follow(root, "egress/refusals.jsonl", nil, c.on)
	defer fo.Close()
	fo.Poll() // neither the dir nor the file yet
	if err := os.MkdirAll(filepath.Join(root, "egress"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(root, "egress", "refusals.jsonl"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(refusal(1))
	fo.Poll()
	if got := strings.Join(c.hosts(), ","); got != "h1.example" {
		t.Errorf("read %q, want h1 (the file began after the run did)", got)
	}
}

func TestFollowerFollowsRotations(t *testing.T) {
	root, w := followed(t, 4096)
	var c collected
	fo := Follow(root, "egress/refusals.jsonl", nil, c.on)
	defer fo.Close()
	const n = 30 // about 150 bytes each: one rotation between polls
	for i := range n {
		w.Add(refusal(i))
		if i%20 == 0 {
			fo.Poll()
		}
	}
	fo.Poll()
	if len(c.got) != n {
		t.Fatalf("read %d refusals across the rotation, want %d: %v", len(c.got), n, c.hosts())
	}
	for i, r := range c.got {
		if want := fmt.Sprintf("h%d.example", i); r.Host != want {
			t.Errorf("refusal %d is %s, want %s", i, r.Host, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "egress", "refusals.jsonl.1")); err != nil {
		t.Errorf("the test did not rotate: %v", err)
	}
}

func TestFollowerSkipsGarbageAndWaitsForALineEnd(t *testing.T) {
	root, w := followed(t, 0)
	var log logBuf
	var c collected
	fo := Follow(root, "egress/refusals.jsonl", log.logger(), c.on)
	defer fo.Close()
	file := filepath.Join(root, "egress", "refusals.jsonl")
	appendRaw := func(s string) {
		t.Helper()
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	appendRaw("not json\n{\"method\":\"GET\"}\n[1,2]\n\n" + strings.Repeat("x", MaxLine+10) + "\n")
	w.Add(refusal(1))
	// A partial last line: nothing of it until its newline.
	appendRaw(`{"time":"2026-01-01T00:00:00Z","method":"GET","host":"partial.example",`)
	fo.Poll()
	if got := strings.Join(c.hosts(), ","); got != "h1.example" {
		t.Fatalf("read %q, want h1 alone (garbage skipped, the partial line held)", got)
	}
	appendRaw(`"port":80,"reason":"r"}` + "\n" + "more garbage\n")
	w.Add(refusal(2))
	fo.Poll()
	if got := strings.Join(c.hosts(), ","); got != "h1.example,partial.example,h2.example" {
		t.Errorf("read %q, want h1, the completed line and h2", got)
	}
	if n := strings.Count(log.String(), "not refusals"); n != 1 {
		t.Errorf("%d warnings about garbage, want one:\n%s", n, log.String())
	}
}

func TestFollowerRefusesALinkInsteadOfTheFile(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "host-file.jsonl")
	line := `{"time":"2026-01-01T00:00:00Z","method":"GET","host":"secret.example","port":80,"reason":"r"}` + "\n"
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "egress"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log logBuf
	var c collected
	fo := Follow(root, "egress/refusals.jsonl", log.logger(), c.on)
	defer fo.Close()
	if err := os.Symlink(outside, filepath.Join(root, "egress", "refusals.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	fo.Poll()
	fo.Poll()
	if len(c.got) != 0 {
		t.Errorf("read %v through a link", c.hosts())
	}
	if n := strings.Count(log.String(), "file is refused"); n != 1 {
		t.Errorf("%d warnings about the link, want one:\n%s", n, log.String())
	}
	// A link where the directory belongs: the same.
	if err := os.RemoveAll(filepath.Join(root, "egress")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(root, "egress")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(outside, filepath.Join(filepath.Dir(outside), "refusals.jsonl")); err != nil {
		t.Fatal(err)
	}
	fo.Poll()
	if len(c.got) != 0 {
		t.Errorf("read %v through a linked directory", c.hosts())
	}
}
