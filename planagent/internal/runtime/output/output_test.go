package output

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestTail(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef"},
		{"over the limit keeps the end", 4, []string{"abcdef", "ghij"}, "[... 6 bytes of output cut ...]\nghij"},
		{"over twice the limit", 2, []string{"abcde", "f"}, "[... 4 bytes of output cut ...]\nef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &Tail{Limit: tc.limit}
			for _, w := range tc.writes {
				if _, err := b.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCappedFileKeepsWholeLinesUpToItsCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "e.jsonl")
	c := &CappedFile{Path: p, Limit: 10}
	for _, s := range []string{"abc", "d\nef", "g\n", "0123456789\n", "x\n"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	_ = c.Close()
	if b, _ := os.ReadFile(p); string(b) != "abcd\nefg\n" {
		t.Errorf("file = %q, want the lines that fit in 10 bytes", b)
	}
}

func TestRedactAndLastLine(t *testing.T) {
	if got := Redact("key sk-1 and sk-1", "sk-1"); got != "key [redacted] and [redacted]" {
		t.Errorf("Redact = %q", got)
	}
	if got := Redact("nothing to hide", ""); got != "nothing to hide" {
		t.Errorf("Redact with no secret = %q", got)
	}
	if got := LastLine("noise\n{\"checks\":[]}\n\n"); got != `{"checks":[]}` {
		t.Errorf("LastLine = %q", got)
	}
}

// Lines written from many goroutines arrive whole.
func TestLockedWriterKeepsLinesWhole(t *testing.T) {
	var sb strings.Builder
	w := &LockedWriter{W: &sb}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			line := strings.Repeat(string(rune('a'+i)), 100) + "\n"
			for range 50 {
				_, _ = w.Write([]byte(line))
			}
		})
	}
	wg.Wait()
	for _, l := range strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n") {
		if len(l) != 100 || strings.Count(l, l[:1]) != 100 {
			t.Fatalf("a mixed line: %q", l)
		}
	}
}
