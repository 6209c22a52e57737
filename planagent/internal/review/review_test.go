package review

import (
	"strings"
	"testing"
)

func TestParseWhere(t *testing.T) {
	for in, want := range map[string]string{"main.go:12": "main.go:12", "a/b:c.go:3": "a/b:c.go:3", "./x/../y.go:1": "y.go:1"} {
		f, l, err := ParseWhere(in)
		if err != nil || (Comment{File: f, Line: l}).Where() != want {
			t.Errorf("ParseWhere(%q) = %s %d %v, want %s", in, f, l, err, want)
		}
	}
	for _, bad := range []string{"main.go", "main.go:0", "main.go:x", ":3", "/etc/passwd:1", "../x:1"} {
		if _, _, err := ParseWhere(bad); err == nil {
			t.Errorf("ParseWhere(%q) accepted", bad)
		}
	}
}

func TestStoreAndFollowUp(t *testing.T) {
	s := Open(t.TempDir())
	if _, err := s.Add(Comment{Task: "t1", File: "a.go", Line: 1, Text: " "}); err == nil {
		t.Error("an empty comment was saved")
	}
	a, _ := s.Add(Comment{Task: "t1", File: "a.go", Line: 1, Text: "rename x"})
	b, _ := s.Add(Comment{Task: "t1", File: "a.go", Line: 9, Text: "handle the error"})
	if a.ID != 1 || b.ID != 2 {
		t.Fatalf("ids %d %d", a.ID, b.ID)
	}
	if err := s.MarkSent([]int{1}, "t1-review"); err != nil {
		t.Fatal(err)
	}
	cs, _ := s.List()
	if p := Pending(cs); len(p) != 1 || p[0].ID != 2 {
		t.Errorf("pending = %+v", p)
	}
	fu := NewFollowUp("t1", "Write a", []string{"go test ./..."}, cs, "+x\n", func(id string) bool { return id == "t1-review" })
	if fu.ID != "t1-review-2" || fu.Dependencies[0] != "t1" || fu.Acceptance[0] != "go test ./..." ||
		!strings.Contains(fu.Description, "- a.go:9: handle the error") || !strings.Contains(fu.Description, "```diff\n+x\n```") {
		t.Errorf("follow-up: %+v", fu)
	}
}
