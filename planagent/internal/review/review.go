// Package review keeps the comments a person leaves on the lines of a
// task's change (`planagent comment`, the web view), and turns a task's
// pending comments into a follow-up task of the run: "address the review
// of t3", with the comments (file and line) and the task's diff as its
// context, depending on t3. The comments of a run live in
// runs/<run>/review.json, written atomically under an flock so the web
// view and the terminal can both add to it.
package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Comment is one remark on a line of a task's change. FollowUp is the task
// it was sent to ("" while pending).
type Comment struct {
	ID       int       `json:"id"`
	Task     string    `json:"task"`
	File     string    `json:"file"`
	Line     int       `json:"line"`
	Text     string    `json:"text"`
	Time     time.Time `json:"time"`
	FollowUp string    `json:"follow_up,omitempty"`
}

// Where is "file:line".
func (c Comment) Where() string { return c.File + ":" + strconv.Itoa(c.Line) }

// Store is the comments of one run.
type Store struct{ dir string }

// Open is the store of the run whose directory is runDir.
func Open(runDir string) Store { return Store{dir: runDir} }

func (s Store) path() string { return filepath.Join(s.dir, "review.json") }

// List returns the comments, oldest first; none when there are none.
func (s Store) List() ([]Comment, error) {
	b, err := protocol.ReadRegular(s.path(), 8<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the review: %w", err)
	}
	var cs []Comment
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("the review %s is corrupt (%w): move it aside", s.path(), err)
	}
	return cs, nil
}

// Pending are the comments not yet sent to a follow-up task.
func Pending(cs []Comment) []Comment {
	var out []Comment
	for _, c := range cs {
		if c.FollowUp == "" {
			out = append(out, c)
		}
	}
	return out
}

// Add saves a new comment and returns it with its id.
func (s Store) Add(c Comment) (Comment, error) {
	if strings.TrimSpace(c.Text) == "" {
		return c, errors.New("the comment is empty: say what to change")
	}
	if c.File == "" || c.Line < 1 {
		return c, errors.New("a comment is on FILE:LINE (a line number from 1)")
	}
	err := s.update(func(cs []Comment) ([]Comment, error) {
		c.ID = len(cs) + 1
		if c.Time.IsZero() {
			c.Time = time.Now().UTC()
		}
		return append(cs, c), nil
	})
	return c, err
}

// MarkSent records that the comments ids went to the task followUp.
func (s Store) MarkSent(ids []int, followUp string) error {
	set := map[int]bool{}
	for _, id := range ids {
		set[id] = true
	}
	return s.update(func(cs []Comment) ([]Comment, error) {
		for i := range cs {
			if set[cs[i].ID] {
				cs[i].FollowUp = followUp
			}
		}
		return cs, nil
	})
}

// update changes the comments under the review's lock.
func (s Store) update(change func([]Comment) ([]Comment, error)) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "review.lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("review lock: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("review lock: %w", err)
	}
	cs, err := s.List()
	if err != nil {
		return err
	}
	if cs, err = change(cs); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	return protocol.WriteFileAtomic(s.path(), b, 0o644)
}

// ParseWhere reads "FILE:LINE".
func ParseWhere(s string) (file string, line int, err error) {
	i := strings.LastIndex(s, ":")
	if i <= 0 {
		return "", 0, fmt.Errorf("%q: want FILE:LINE, e.g. main.go:12", s)
	}
	line, err = strconv.Atoi(s[i+1:])
	if err != nil || line < 1 {
		return "", 0, fmt.Errorf("%q: the line must be a number from 1, e.g. main.go:12", s)
	}
	file = filepath.ToSlash(filepath.Clean(s[:i]))
	if filepath.IsAbs(file) || file == ".." || strings.HasPrefix(file, "../") {
		return "", 0, fmt.Errorf("%q: the file is relative to the workspace", s)
	}
	return file, line, nil
}

// diffMax caps the diff carried in a follow-up task's description.
const diffMax = 12 << 10

// FollowUp is the task that addresses comments (all of one task) of the
// task reviewed: its id is unused in taken.
type FollowUp struct {
	ID, Title, Description   string
	Dependencies, Acceptance []string
}

// NewFollowUp makes the follow-up task of the comments on task (whose
// acceptance commands it keeps), diff its change.
func NewFollowUp(task, title string, acceptance []string, cs []Comment, diff string, taken func(string) bool) FollowUp {
	id := task + "-review"
	for n := 2; taken(id); n++ {
		id = fmt.Sprintf("%s-review-%d", task, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Address the review of task %s (%s). A person left these comments on its change; change the code so each is resolved:\n\n", task, title)
	for _, c := range cs {
		fmt.Fprintf(&b, "- %s: %s\n", c.Where(), strings.TrimSpace(c.Text))
	}
	if diff != "" {
		if len(diff) > diffMax {
			diff = diff[:diffMax] + "\n… (diff cut)\n"
		}
		fmt.Fprintf(&b, "\nThe change of %s that was reviewed:\n\n```diff\n%s```\n", task, diff)
	}
	return FollowUp{ID: id, Title: "Address the review of " + task, Description: b.String(),
		Dependencies: []string{task}, Acceptance: acceptance}
}

// Sent is a follow-up task made from comments.
type Sent struct {
	Task, FollowUp string
	Comments       int
}

// Send turns the pending comments into follow-up tasks of the run in st,
// one per task reviewed (diffOf gives a task's change, "" when unknown),
// saves the state and marks the comments sent. The caller holds the run's
// lock: nothing else drives the run meanwhile.
func Send(l volume.Layout, st *runrecord.State, pending []Comment, diffOf func(commit string) string) ([]Sent, error) {
	var order []string
	byTask := map[string][]Comment{}
	for _, c := range pending {
		if byTask[c.Task] == nil {
			order = append(order, c.Task)
		}
		byTask[c.Task] = append(byTask[c.Task], c)
	}
	taken := map[string]bool{}
	known := map[string]taskgraph.Task{}
	for _, t := range st.Tasks {
		taken[t.ID], known[t.ID] = true, t
	}
	var tasks []taskgraph.Task
	var out []Sent
	sent := map[string][]int{}
	for _, id := range order {
		t, ok := known[id]
		if !ok {
			return nil, fmt.Errorf("the review names task %q, which run %s does not have", id, st.RunID)
		}
		diff := ""
		if in := st.Info[id]; in != nil && in.Commit != "" && diffOf != nil {
			diff = diffOf(in.Commit)
		}
		fu := NewFollowUp(id, t.Title, t.Acceptance, byTask[id], diff, func(x string) bool { return taken[x] })
		taken[fu.ID] = true
		tasks = append(tasks, taskgraph.Task{ID: fu.ID, Title: fu.Title, Description: fu.Description,
			Dependencies: fu.Dependencies, Acceptance: fu.Acceptance})
		for _, c := range byTask[id] {
			sent[fu.ID] = append(sent[fu.ID], c.ID)
		}
		out = append(out, Sent{Task: id, FollowUp: fu.ID, Comments: len(byTask[id])})
	}
	if err := st.AddTasks(tasks); err != nil {
		return nil, err
	}
	if err := st.Save(l, time.Now()); err != nil {
		return nil, err
	}
	store := Open(l.Run(st.RunID))
	for fu, ids := range sent {
		if err := store.MarkSent(ids, fu); err != nil {
			return nil, err
		}
	}
	return out, nil
}
