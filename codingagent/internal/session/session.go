// Package session persists a conversation as JSONL, one record per line, so
// an agent killed at any moment (even with SIGKILL mid-write) can resume from
// the last complete record.
package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
)

// Kind names what a record holds.
type Kind string

const (
	// KindMessage is one message of the conversation, in full.
	KindMessage Kind = "message"
	// KindTask marks the start of a task's conversation (its first user message follows).
	KindTask Kind = "task"
	// KindCompaction replaces messages [Start, End) of the live history by one
	// summary message; replaying records in order reproduces the history.
	KindCompaction Kind = "compaction"
	// KindFocus adds a file to the focused files (Edited when it was changed).
	KindFocus Kind = "focus"
)

// Record is one line of the log. Fields not relevant to Kind stay empty.
type Record struct {
	Kind    Kind         `json:"kind"`
	Time    time.Time    `json:"time"`
	Message *llm.Message `json:"message,omitempty"`
	TaskID  string       `json:"task_id,omitempty"`
	Start   int          `json:"start,omitempty"`
	End     int          `json:"end,omitempty"`
	Summary string       `json:"summary,omitempty"`
	Path    string       `json:"path,omitempty"`
	Edited  bool         `json:"edited,omitempty"`
}

// Log is an append-only JSONL file. Safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// Open opens (creating it and its directory when missing) the log at path.
// A torn last line left by a crash is cut off first, so the records appended
// from now on start on a fresh line.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create session dir for %s: %w", path, err)
	}
	f, err := protocol.OpenRegular(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", path, err)
	}
	if err := cutTornTail(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open session %s: %w", path, err)
	}
	return &Log{path: path, f: f}, nil
}

// cutTornTail truncates f after its last newline: whatever follows it is a
// record whose write never completed.
func cutTornTail(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size == 0 {
		return nil
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if keep == size {
				return nil
			}
			return f.Truncate(keep)
		}
		end = start
	}
	return f.Truncate(0)
}

// Path is the file the log writes.
func (l *Log) Path() string { return l.path }

// Append writes rec as one line with a single write, so a crash leaves at
// worst one torn line at the end. The time is filled in when missing.
func (l *Log) Append(rec Record) error {
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode session record (%s): %w", rec.Kind, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("append to session %s: %w", l.path, os.ErrClosed)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("append to session %s: %w", l.path, err)
	}
	return nil
}

// Load reads every record. An undecodable last line (a write cut short by a
// crash) is ignored; an undecodable line before it is corruption and an error.
func (l *Log) Load() ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Read(l.path)
}

// Read loads the records of the log file at path without opening it for
// writing; a missing file has no records.
func Read(path string) ([]Record, error) {
	data, err := protocol.ReadRegular(path, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", path, err)
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), len(data)+1)
	line := 0
	var bad error
	for sc.Scan() {
		line++
		if bad != nil {
			return nil, bad
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r Record
		err := json.Unmarshal(b, &r)
		if err == nil && r.Kind == "" {
			err = errors.New("record has no kind")
		}
		if err != nil {
			// Only fatal when another line follows: the last line may be torn.
			bad = fmt.Errorf("session %s line %d is corrupt (move the file away to start a fresh session): %w", path, line, err)
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read session %s: %w", path, err)
	}
	return recs, nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close session %s: %w", l.path, err)
	}
	return nil
}
