package attempt

import "testing"

// ParseName reads back what Name wrote, dots in the task id included, and
// nothing else.
func TestParseName(t *testing.T) {
	for _, tt := range []struct {
		id string
		n  int
	}{{"build", 1}, {"v1.2-api", 13}} {
		id, n, ok := ParseName(Name(tt.id, tt.n))
		if !ok || id != tt.id || n != tt.n {
			t.Errorf("ParseName(Name(%q, %d)) = %q, %d, %v", tt.id, tt.n, id, n, ok)
		}
	}
	for _, bad := range []string{"", "build", ".2", "build.0", "build.x", "build.-1"} {
		if id, n, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %q, %d, true; want false", bad, id, n)
		}
	}
}

// An attempt's files are named by its stem when it has one, else by its task.
func TestFiles(t *testing.T) {
	if got := (Attempt{TaskID: "parser", Attempt: 1}).Files(); got != "parser" {
		t.Errorf("one attempt: %q, want the task id", got)
	}
	if got := (Attempt{TaskID: "parser", Attempt: 2, Stem: "parser@2"}).Files(); got != "parser@2" {
		t.Errorf("side by side: %q, want the stem", got)
	}
}
