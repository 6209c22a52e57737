package tools

import (
	"strings"
	"testing"
)

// The volumes dir of `--workspace .` is not part of the workspace: no tool
// lists, finds, reads or writes it.
func TestExcludedDirIsOutOfEveryTool(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{
		"main.go":                      "package main // NEEDLE\n",
		"volumes/context/project/p.md": "NEEDLE in the volumes\n",
		"volumes/reports/t1.md":        "report\n",
		"volumesque/kept.txt":          "NEEDLE kept\n",
	})
	ws.Exclude("volumes", "/elsewhere/outside")
	if res := run(t, ws, "list_dir", args{"path": "."}); strings.Contains(res.Content, "volumes/\n") || !strings.Contains(res.Content, "volumesque/") {
		t.Errorf("list_dir:\n%s", res.Content)
	}
	res := run(t, ws, "grep", args{"pattern": "NEEDLE"})
	if strings.Contains(res.Content, "volumes/context") || !strings.Contains(res.Content, "main.go") || !strings.Contains(res.Content, "volumesque/kept.txt") {
		t.Errorf("grep:\n%s", res.Content)
	}
	if res := run(t, ws, "glob", args{"pattern": "**/*.md"}); strings.Contains(res.Content, "volumes/") {
		t.Errorf("glob:\n%s", res.Content)
	}
	// The other walkers of the workspace get the same policy.
	if got := ws.ExcludePatterns(); len(got) != 1 || got[0] != "/volumes/" {
		t.Errorf("ExcludePatterns() = %q, want [/volumes/]", got)
	}
	if !ws.Files().Ignored("volumes/reports/t1.md", false) || ws.Files().Ignored("volumesque/kept.txt", false) {
		t.Error("Files() does not hide volumes/ alone")
	}
	for _, tc := range []struct {
		tool string
		args args
	}{
		{"read_file", args{"path": "volumes/reports/t1.md"}},
		{"read_file", args{"path": "./main.go/../volumes/reports/t1.md"}},
		{"write_file", args{"path": "volumes/commands/x.md", "content": "x"}},
		{"list_dir", args{"path": "volumes"}},
	} {
		res := run(t, ws, tc.tool, tc.args)
		if !strings.Contains(res.Content, "not part of the workspace") {
			t.Errorf("%s %v: %s", tc.tool, tc.args, res.Content)
		}
	}
}
