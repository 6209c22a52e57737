package protocol

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr string // substring; empty = valid
	}{
		{id: "t1"},
		{id: "build-api_v2.1"},
		{id: "A"},
		{id: strings.Repeat("x", MaxIDLength)},
		{id: "", wantErr: "empty"},
		{id: strings.Repeat("x", MaxIDLength+1), wantErr: "limit is 64"},
		{id: ".", wantErr: "starts with '.'"},
		{id: "..", wantErr: "starts with '.'"},
		{id: ".hidden", wantErr: "starts with '.'"},
		{id: "../etc/passwd", wantErr: "starts with '.'"},
		{id: "a/b", wantErr: `contains '/'`},
		{id: `a\b`, wantErr: `contains '\\'`},
		{id: "a b", wantErr: "contains ' '"},
		{id: "a\x00b", wantErr: "contains"},
		{id: "tâche", wantErr: "contains 'â'"},
		{id: "t1\n", wantErr: "contains"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidateID(tt.id)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateID(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateID(%q) = %v, want error containing %q", tt.id, err, tt.wantErr)
			}
		})
	}
}

// A valid id joined under a directory must stay directly inside it.
func TestValidIDStaysInDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"t1", "a..b", "x.", "-", "_"} {
		if err := ValidateID(id); err != nil {
			t.Fatalf("ValidateID(%q) = %v", id, err)
		}
		p := filepath.Join(dir, id)
		if filepath.Dir(p) != dir {
			t.Errorf("id %q escapes %s: %s", id, dir, p)
		}
	}
}

func TestIsTempName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"t1.md", false},
		{"commands/t1.md", false},
		{".t1.md.tmp-123456", true},
		{"/v/commands/.t1.md.tmp-1", true},
		{".claimed", true},
		{".t1.md.swp", true},
		{"t1.events.jsonl", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTempName(tt.name); got != tt.want {
				t.Errorf("IsTempName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestStem(t *testing.T) {
	if got := Stem("parser", 0); got != "parser" {
		t.Errorf("Stem(parser, 0) = %q, want the id", got)
	}
	if got := Stem("parser", 3); got != "parser@3" {
		t.Errorf("Stem(parser, 3) = %q", got)
	}
	tests := []struct {
		stem string
		id   string
		n    int
		ok   bool
	}{
		{"parser", "parser", 0, true},
		{"parser@3", "parser", 3, true},
		{"a.b-c_d@12", "a.b-c_d", 12, true},
		{"parser@", "", 0, false},
		{"parser@0", "", 0, false},
		{"parser@03", "", 0, false},
		{"parser@x", "", 0, false},
		{"parser@1@2", "", 0, false},
		{"parser@12345", "", 0, false},
		{"@2", "", 0, false},
		{"../x@2", "", 0, false},
	}
	for _, tt := range tests {
		id, n, ok := SplitStem(tt.stem)
		if id != tt.id || n != tt.n || ok != tt.ok {
			t.Errorf("SplitStem(%q) = %q, %d, %v; want %q, %d, %v", tt.stem, id, n, ok, tt.id, tt.n, tt.ok)
		}
		if err := ValidateStem(tt.stem); (err == nil) != tt.ok {
			t.Errorf("ValidateStem(%q) = %v, want ok %v", tt.stem, err, tt.ok)
		} else if err != nil && err.Error() == "" {
			t.Errorf("ValidateStem(%q): an empty error", tt.stem)
		}
	}
	// An attempt's stem is never a task id, so it cannot name another task's files.
	if ValidateID(Stem("parser", 2)) == nil {
		t.Error("an attempt's stem passed ValidateID: it could collide with a task id")
	}
}

// A command in an attempt's file names the task, not the stem.
func TestCommandInAnAttemptsFile(t *testing.T) {
	c := &Command{ID: "parser", RunID: "r1", Attempt: 2, Title: "Parser", Body: "x"}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCommand("commands/parser@2.md", data); err != nil {
		t.Errorf("parse parser@2.md holding task parser: %v", err)
	}
	if _, err := ParseCommand("commands/other@2.md", data); err == nil {
		t.Error("other@2.md holding task parser was accepted")
	}
}
