package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The history file is in the volumes: a symbolic link the agent put there
// is neither read nor appended to (it could point at ~/.bashrc).
func TestHistoryRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(target, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".chat-history-x")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	h := loadHistory(link)
	if h.Len() != 0 {
		t.Errorf("read %d lines through the link", h.Len())
	}
	h.Add("rm -rf ~")
	if b, _ := os.ReadFile(target); string(b) != "# mine\n" {
		t.Errorf("the link's target was written: %q", b)
	}

	// A real history file: kept, deduplicated, newest first.
	real := filepath.Join(dir, ".chat-history-y")
	h = loadHistory(real)
	for _, l := range []string{"one", "two", "two", "", "three"} {
		h.Add(l)
	}
	h = loadHistory(real)
	var got []string
	for i := 0; i < h.Len(); i++ {
		got = append(got, h.At(i))
	}
	if strings.Join(got, ",") != "three,two,one" {
		t.Errorf("history %v", got)
	}
}
