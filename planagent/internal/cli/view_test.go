package cli

import (
	"strings"
	"testing"
)

// The runs table cuts a goal at 60 characters with "…", on one line, so a
// cut goal does not read as a whole one.
func TestShortGoal(t *testing.T) {
	long := "Write notes/a.md and notes/b.md from the outline, then link them > notes/index.md"
	tests := []struct{ in, want string }{
		{"fix the tests", "fix the tests"},
		{"fix\n  the   tests", "fix the tests"},
		{strings.Repeat("é", 60), strings.Repeat("é", 60)},
		{long, long[:60] + "…"},
	}
	for _, tt := range tests {
		if got := shortGoal(tt.in); got != tt.want {
			t.Errorf("shortGoal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
