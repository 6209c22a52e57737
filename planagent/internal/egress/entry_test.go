package egress

import (
	"net/url"
	"testing"
)

func TestEntryFor(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://localhost:11434/v1", "localhost:11434"},
		{"https://api.example.com/v1", "api.example.com:443"},
		{"http://model.internal/v1", "model.internal:80"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"https://10.0.0.5/", "10.0.0.5:443"},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := EntryFor(u); got != tc.want {
			t.Errorf("EntryFor(%s) = %q, want %q", tc.url, got, tc.want)
		}
		// What it makes is an entry the policy takes.
		if _, err := Parse([]string{EntryFor(u)}, nil); err != nil {
			t.Errorf("Parse(%q): %v", EntryFor(u), err)
		}
	}
}
