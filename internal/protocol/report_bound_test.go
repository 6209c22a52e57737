package protocol

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestOversizedReportIsBounded: an agent's 2 MB answer, a 40 KB error, a
// change of 200 000 files and 300 sub-agents still make a report that is
// written and read back, each cut field saying so (issue 39: a report
// refused for its size lost the task).
func TestOversizedReportIsBounded(t *testing.T) {
	r := fullReport()
	r.Status, r.Error = StatusCompleted, strings.Repeat("e", 40<<10)
	r.Body = strings.Repeat("answer ", 2<<20/7)
	r.Summary = strings.Repeat("s", 10<<10)
	r.FilesChanged = make([]string, 30000)
	for i := range r.FilesChanged {
		r.FilesChanged[i] = fmt.Sprintf("pkg/dir%d/file%d.go", i%100, i)
	}
	for i := range 300 {
		r.Subagents = append(r.Subagents, Subagent{ID: fmt.Sprintf("t2.sub%d", i+1), Goal: strings.Repeat("g", 5000)})
	}
	path := filepath.Join(t.TempDir(), "t2.md")
	if err := WriteReport(path, r); err != nil {
		t.Fatalf("an oversized report was refused: %v", err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(back.Body, "answer answer") || !strings.Contains(back.Body, "[truncated: ") || len(back.Body) > MaxReportBody+200 {
		t.Errorf("body of %d bytes: want the head and a truncation note within %d", len(back.Body), MaxReportBody)
	}
	if !strings.Contains(back.Body, "more files not listed]") || !strings.Contains(back.Body, "[subagents truncated: 200 more not listed]") {
		t.Errorf("the body does not say what lists were cut: ...%s", back.Body[len(back.Body)-200:])
	}
	if !strings.Contains(back.Error, "[truncated: ") || len(back.Error) > MaxReportError {
		t.Errorf("error of %d bytes", len(back.Error))
	}
	if len(back.FilesChanged) == 0 || back.FilesChanged[0] != r.FilesChanged[0] || len(back.FilesChanged) == len(r.FilesChanged) {
		t.Errorf("%d files listed of %d", len(back.FilesChanged), len(r.FilesChanged))
	}
	if len(back.Subagents) != 100 || len(back.Subagents[0].Goal) > 1<<10 {
		t.Errorf("%d subagents, first goal %d bytes", len(back.Subagents), len(back.Subagents[0].Goal))
	}
	if len(r.Body) < 2<<20-7 || len(r.FilesChanged) != 30000 {
		t.Error("WriteReport changed the caller's report")
	}
}
