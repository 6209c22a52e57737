package runrecord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// A run's state is a snapshot (state.json, rewritten whole) plus a journal
// (journal.jsonl, one JSON record per transition, appended and fsynced).
// A transition costs one record the size of the tasks it touched, not a
// rewrite of the whole run, so a 10 000-task run costs the same per task
// as a 10-task one; every compactEvery records the snapshot is rewritten
// and the journal starts afresh, which keeps replay short and the
// amortised cost O(1).
//
// Crash safety: a record is complete once its newline is on disk. A torn
// last record (a crash mid-append) is ignored when reading and cut off
// before the next append. Records carry absolute values (the whole task,
// not a change), and the snapshot names the last record it includes
// (journal_seq), so a crash between writing a snapshot and emptying the
// journal replays nothing twice.

// journalRecord is one transition.
type journalRecord struct {
	Seq         int64         `json:"seq"`
	Status      RunStatus     `json:"status"`
	Updated     time.Time     `json:"updated"`
	Usage       tokens.Usage  `json:"usage"`
	Elapsed     time.Duration `json:"elapsed,omitempty"`
	Paused      string        `json:"paused,omitempty"`
	Checkpoints *Checkpoints  `json:"checkpoints,omitempty"`
	// Decisions are the ones made since the previous record.
	Decisions []Decision    `json:"decisions,omitempty"`
	Tasks     []journalTask `json:"tasks,omitempty"`
}

// journalTask is a task's whole record after the transition.
type journalTask struct {
	Task taskgraph.Task `json:"task"`
	Info *TaskInfo      `json:"info"`
}

// journal is the open journal of a State being driven.
type journal struct {
	f         *os.File // nil until the first append (readers never open it for writing)
	seq       int64    // last record written or replayed
	size      int64    // bytes of complete records: a torn tail beyond is cut before appending
	dirty     bool     // records written since the last fsync
	records   int      // records since the snapshot
	decisions int      // len(State.Decisions) already in the snapshot or the journal
	index     map[string]int
}

// compactEvery is how many records go between snapshots: at least the
// number of tasks, so the O(tasks) snapshot is paid once per O(tasks)
// transitions.
func compactEvery(tasks int) int { return max(256, tasks) }

func journalPath(l volume.Layout, runID string) string {
	return filepath.Join(l.Run(runID), "journal.jsonl")
}

// Record persists one transition of the tasks given (their new graph state;
// their TaskInfo is taken from s.Info) together with the run's status,
// usage, checkpoints and any new decisions: one appended line. It survives
// the process being killed at once; Sync makes it survive a power cut too,
// and is called before any side effect that depends on the record (and
// once per batch of transitions, so records written together share one
// fsync). Use Save for a transition that changes the task list (a replan).
func (s *State) Record(l volume.Layout, now time.Time, tasks ...taskgraph.Task) error {
	if s.j == nil || s.j.index == nil {
		s.indexTasks()
	}
	for _, t := range tasks {
		i, ok := s.j.index[t.ID]
		if !ok {
			return s.snapshotWith(l, now, tasks)
		}
		s.Tasks[i] = t
	}
	s.Updated = now
	rec := journalRecord{Seq: s.j.seq + 1, Status: s.Status, Updated: now, Usage: s.Usage, Elapsed: s.Elapsed,
		Paused: s.Paused, Checkpoints: s.Checkpoints,
		Decisions: s.Decisions[min(s.j.decisions, len(s.Decisions)):]}
	for _, t := range tasks {
		rec.Tasks = append(rec.Tasks, journalTask{Task: t, Info: s.Info[t.ID]})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode run state record: %w", err)
	}
	if err := s.j.append(l, s.RunID, append(b, '\n')); err != nil {
		return err
	}
	s.j.seq = rec.Seq
	s.j.records++
	s.j.decisions = len(s.Decisions)
	if s.j.records >= compactEvery(len(s.Tasks)) {
		return s.Save(l, now)
	}
	return nil
}

// snapshotWith applies tasks the index does not know (new ones) and saves.
func (s *State) snapshotWith(l volume.Layout, now time.Time, tasks []taskgraph.Task) error {
	for _, t := range tasks {
		if i, ok := s.j.index[t.ID]; ok {
			s.Tasks[i] = t
			continue
		}
		s.j.index[t.ID] = len(s.Tasks)
		s.Tasks = append(s.Tasks, t)
	}
	return s.Save(l, now)
}

func (s *State) indexTasks() {
	if s.j == nil {
		s.j = &journal{decisions: len(s.Decisions), seq: s.JournalSeq}
	}
	s.j.index = make(map[string]int, len(s.Tasks))
	for i, t := range s.Tasks {
		s.j.index[t.ID] = i
	}
}

// append writes one complete record (see Sync for its fsync). The first
// append opens the journal and cuts off a torn tail left by a crash.
func (j *journal) append(l volume.Layout, runID string, line []byte) error {
	if j.f == nil {
		root, err := volumesRoot(l)
		if err != nil {
			return fmt.Errorf("open run journal: %w", err)
		}
		f, err := root.OpenFile(journalPath(l, runID), os.O_WRONLY|os.O_CREATE, 0o644)
		_ = root.Close()
		if err != nil {
			return fmt.Errorf("open run journal: %w", err)
		}
		if err := f.Truncate(j.size); err != nil {
			f.Close()
			return fmt.Errorf("open run journal: %w", err)
		}
		if _, err := f.Seek(j.size, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("open run journal: %w", err)
		}
		j.f = f
	}
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("append to run journal: %w", err)
	}
	j.size += int64(len(line))
	j.dirty = true
	return nil
}

// Sync makes the records written so far durable (fsync); a no-op when
// there are none.
func (s *State) Sync() error {
	if s.j == nil || s.j.f == nil || !s.j.dirty {
		return nil
	}
	if err := s.j.f.Sync(); err != nil {
		return fmt.Errorf("sync run journal: %w", err)
	}
	s.j.dirty = false
	return nil
}

// restart empties the journal after a snapshot that includes all of it.
func (j *journal) restart(l volume.Layout, runID string) error {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	j.size, j.records, j.dirty = 0, 0, false
	root, err := volumesRoot(l)
	if err != nil {
		return fmt.Errorf("empty run journal: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(journalPath(l, runID), os.O_WRONLY|os.O_TRUNC, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case errors.Is(err, protocol.ErrNotRegular):
		// A link (or FIFO) where the journal belongs: truncating it would
		// empty whatever it points to. It goes; the next append makes the file.
		err = root.RemoveAll(journalPath(l, runID))
	case err == nil:
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("empty run journal: %w", err)
	}
	return nil
}

// Close releases the journal's file; the State can still be recorded to
// (it reopens).
func (s *State) Close() error {
	if s.j == nil || s.j.f == nil {
		return nil
	}
	err := errors.Join(s.Sync(), s.j.f.Close())
	s.j.f = nil
	return err
}

// replayJournal applies the journal's records after the snapshot to s. A
// torn last record is ignored (its size is left out, so the next append
// cuts it off); a bad record before the last one means the file was
// damaged otherwise, and is an error naming its line.
func (s *State) replayJournal(l volume.Layout) error {
	s.indexTasks()
	data, err := protocol.ReadRegular(journalPath(l, s.RunID), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run journal: %w", err)
	}
	var off int64
	for line := 1; len(data) > 0; line++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // torn: the crash came before the newline
		}
		var rec journalRecord
		if err := json.Unmarshal(data[:nl], &rec); err != nil {
			if len(bytes.TrimSpace(data[nl+1:])) == 0 {
				break // a torn last record whose newline made it (a partial block)
			}
			return fmt.Errorf("run journal %s line %d is corrupt (%w): move the run aside or restore the file",
				journalPath(l, s.RunID), line, err)
		}
		if rec.Seq > s.j.seq {
			s.apply(rec)
		}
		data = data[nl+1:]
		off += int64(nl + 1)
	}
	s.j.size = off
	return nil
}

func (s *State) apply(rec journalRecord) {
	s.j.seq = rec.Seq
	s.Status, s.Updated, s.Usage, s.Elapsed, s.Paused = rec.Status, rec.Updated, rec.Usage, rec.Elapsed, rec.Paused
	if rec.Checkpoints != nil {
		s.Checkpoints = rec.Checkpoints
	}
	s.Decisions = append(s.Decisions, rec.Decisions...)
	s.j.decisions = len(s.Decisions)
	for _, jt := range rec.Tasks {
		if i, ok := s.j.index[jt.Task.ID]; ok {
			s.Tasks[i] = jt.Task
		} else {
			s.j.index[jt.Task.ID] = len(s.Tasks)
			s.Tasks = append(s.Tasks, jt.Task)
		}
		if jt.Info != nil {
			s.Info[jt.Task.ID] = jt.Info
		}
	}
}
