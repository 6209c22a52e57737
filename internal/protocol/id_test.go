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
