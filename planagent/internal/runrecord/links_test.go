package runrecord

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runs/ is planagent's alone, but the host side does not trust the volumes
// tree: a link planted as the run's dir, or as its journal, is not written
// through, truncated through or followed. The record lands in runs/ and the
// host's file is as it was.
func TestLinksInRunsAreNotFollowed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		link   func(l string) string // the path planted, under the volumes l
		target func(outside string) string
	}{
		{"run dir", func(l string) string { return filepath.Join(l, "runs", "run-test-1") },
			func(outside string) string { return outside }},
		{"journal", func(l string) string { return filepath.Join(l, "runs", "run-test-1", "journal.jsonl") },
			func(outside string) string { return filepath.Join(outside, "precious.txt") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t)
			outside := t.TempDir()
			precious := filepath.Join(outside, "precious.txt")
			if err := os.WriteFile(precious, []byte("host"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := tc.link(l.Root)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target(outside), link); err != nil {
				t.Fatal(err)
			}
			st := newTestState(t, chain(2)...)
			if err := st.Save(l, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := st.Record(l, time.Now(), st.Tasks[0]); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Errorf("outside holds %d entries, want only precious.txt", len(entries))
			}
			if b, err := os.ReadFile(precious); err != nil || string(b) != "host" {
				t.Errorf("the host's precious.txt: %q, %v", b, err)
			}
			for _, f := range []string{"state.json", "journal.jsonl"} {
				p := filepath.Join(l.Run(st.RunID), f)
				if fi, err := os.Lstat(p); err != nil {
					t.Error(err)
				} else if !fi.Mode().IsRegular() {
					t.Errorf("%s is %v: want a regular file", p, fi.Mode())
				}
			}
			if _, err := LoadState(l, st.RunID, false); err != nil {
				t.Errorf("the record does not load: %v", err)
			}
		})
	}
}
