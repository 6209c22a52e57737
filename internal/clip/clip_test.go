package clip

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	if got := String("short", 10); got != "short" {
		t.Errorf("String(short) = %q", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes, two per character
	got := String(long, 101)
	if len(got) > 101 {
		t.Errorf("%d bytes, over the limit of 101", len(got))
	}
	if !utf8.ValidString(got) {
		t.Errorf("cut inside a character: %q", got)
	}
	head, n, ok := strings.Cut(got, "\n[truncated: ")
	if !ok || !strings.HasPrefix(long, head) {
		t.Fatalf("no note or not the head: %q", got)
	}
	if want := strings.TrimSuffix(n, " bytes]"); want != strconv.Itoa(len(long)-len(head)) {
		t.Errorf("note says %s bytes cut, %d were", want, len(long)-len(head))
	}
}
