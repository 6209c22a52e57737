package webui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Caps on what one task view carries: reports and diffs are written by the
// agent and may be huge.
const (
	reportMax = 256 << 10
	diffMax   = 512 << 10
)

// TaskDetail is one task's report and diff.
type TaskDetail struct {
	ID           string   `json:"id"`
	Report       string   `json:"report,omitempty"` // the latest report of this run, as written
	ReportFile   string   `json:"report_file,omitempty"`
	FilesChanged []string `json:"files_changed,omitempty"`
	Commit       string   `json:"commit,omitempty"`
	Diff         string   `json:"diff,omitempty"`
	// DiffNote says why there is no diff (no checkpoint yet, a failure).
	DiffNote string `json:"diff_note,omitempty"`
	// Summary is the agent's summary of the task; Acceptance what its
	// acceptance commands printed when it completed.
	Summary    string `json:"summary,omitempty"`
	Acceptance string `json:"acceptance,omitempty"`
	// Subagents are the task's sub-agents with their tokens and cost, as
	// the run view prices them.
	Subagents []runview.Subagent `json:"subagents,omitempty"`
	// Attempts are the task's attempts with their verdicts, shown side by
	// side (docs/attempts.md).
	Attempts []runview.AttemptResult `json:"attempts,omitempty"`
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	id := r.PathValue("task")
	in, known := st.Info[id]
	if !known || protocol.ValidateID(id) != nil {
		http.Error(w, fmt.Sprintf("run %s has no task %q", st.RunID, id), http.StatusNotFound)
		return
	}
	d := TaskDetail{ID: id, FilesChanged: in.FilesChanged, Commit: in.Commit, Summary: in.Summary, Acceptance: in.Acceptance}
	for _, t := range runview.Build(st, s.opts.View).Tasks {
		if t.ID == id {
			d.Subagents, d.Attempts = t.Subagents, t.AttemptResults
		}
	}
	d.ReportFile, d.Report = s.report(st.RunID, id, in)
	completed := false
	for _, t := range st.Tasks {
		if t.ID == id {
			completed = t.Status == taskgraph.Completed
		}
	}
	d.Diff, d.DiffNote = diff(r.Context(), st, in.Commit, completed)
	writeJSON(w, d)
}

// report finds the latest report of task id in run: reports/<id>.md (or,
// for attempts side by side, reports/<id>@<n>.md of its attempt) while it
// is this run's, else the newest attempt archived under the run.
func (s *Server) report(runID, id string, in *runrecord.TaskInfo) (string, string) {
	l := s.opts.Layout
	files := []string{l.ReportFile(id)}
	if in.Series != nil {
		// Side by side, the attempt last chosen (or started) has its own.
		files = append([]string{l.ReportFile(protocol.Stem(id, in.Attempt))}, files...)
	}
	for _, f := range files {
		if rep, err := protocol.ReadReport(f); err == nil && rep.RunID == runID {
			if text, err := readCapped(f, reportMax); err == nil {
				return f, text
			}
		}
	}
	archived, _ := filepath.Glob(filepath.Join(l.Run(runID), "reports", id+".attempt-*.md"))
	attemptOf := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), id+".attempt-"), ".md"))
		return n
	}
	sort.Slice(archived, func(i, j int) bool { return attemptOf(archived[i]) > attemptOf(archived[j]) })
	for _, p := range archived {
		if text, err := readCapped(p, reportMax); err == nil {
			return p, text
		}
	}
	return "", ""
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// diff is the patch of a completed task's checkpoint commit. A completed
// task of a run with checkpoints and no commit changed nothing.
func diff(ctx context.Context, st *runrecord.State, commit string, completed bool) (string, string) {
	cp := st.Checkpoints
	switch {
	case commit == "" && completed && cp != nil:
		return "", "no changes: the task completed without changing any file"
	case commit == "":
		return "", "no checkpoint for this task (it has not completed, or the run has no checkpoints): see files changed"
	case !commitRE.MatchString(commit) || cp == nil:
		return "", "the task's checkpoint is not readable"
	}
	args := []string{"-c", "core.quotepath=off"}
	switch {
	case cp.Mode == "shadow" && cp.GitDir != "":
		args = append(args, "--git-dir", cp.GitDir)
	case st.Settings != nil && st.Settings.Workspace != "":
		args = append(args, "-c", "safe.directory="+st.Settings.Workspace, "-C", st.Settings.Workspace)
	default:
		return "", "the run does not say where its workspace is"
	}
	// A checkpoint may be a merge of the attempt into the integration
	// state: its change is the diff against the first parent.
	args = append(args, "show", "--no-color", "--no-ext-diff", "--no-textconv", "--diff-merges=first-parent", "--stat", "--patch", "--format=commit %H%n%s%n", commit, "--")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	var out capped
	out.max = diffMax
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Sprintf("git show %s: %v: %s", commit, err, strings.TrimSpace(errb.String()))
	}
	text := out.b.String()
	if out.cut {
		text += fmt.Sprintf("\n… (diff cut at %d KiB)\n", diffMax>>10)
	}
	return text, ""
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	b   bytes.Buffer
	max int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room < len(p) {
		c.cut = true
		if room > 0 {
			c.b.Write(p[:room])
		}
		return len(p), nil
	}
	return c.b.Write(p)
}

func readCapped(p string, n int64) (string, error) {
	f, err := protocol.OpenRegular(p, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > n {
		return string(b[:n]) + fmt.Sprintf("\n… (cut at %d KiB)\n", n>>10), nil
	}
	return string(b), nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := jsonout.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}
