package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
)

// What planagent takes back from an attempt's own volumes, at most.
const (
	sessionImportCap = 64 << 20
	memoryImportCap  = 64 << 10
	cacheImportCap   = 256 << 20
	// eventsPoll is how often the live copy of an attempt's events looks
	// for more: progress lines, not the attempt's result.
	eventsPoll = 250 * time.Millisecond
)

// attemptIO is one container attempt's own volumes (volume.Layout.AttemptIO):
// the only directory of the volumes its container can write. planagent
// copies the attempt's command, context layers, memory, session and repo
// map cache in before the start, and takes its report, session, memory and
// cache back only once the container is gone, every file through
// openBeneath: the agent may have swapped any of it for a link or a FIFO.
type attemptIO struct {
	l       volume.Layout // Root is the attempt's own volumes
	task    string
	stem    string // its files' name in the run's volumes (Attempt.Files); its own volumes name them by task
	attempt int
	session string // the session file's name in sessions/
	memory  []byte // the memory the agent was given, to tell what it added
}

// stageIO makes the own volumes of attempt a afresh: a leftover of a
// killed planagent's container for the same attempt gives its session
// back first, so a relaunched attempt continues its conversation.
func (d *Docker) stageIO(a Attempt) (*attemptIO, error) {
	v := d.opts.Volumes
	l, err := volume.New(v.AttemptIO(d.opts.RunID, a.TaskID, a.Attempt), "")
	if err != nil {
		return nil, err
	}
	aio := &attemptIO{l: l, task: a.TaskID, stem: a.Files(), attempt: a.Attempt,
		session: filepath.Base(v.SessionFile(d.opts.RunID, a.TaskID, a.Rel))}
	if _, err := os.Lstat(l.Root); err == nil {
		d.importSession(aio)
		if err := removeTree(l.Root); err != nil {
			return nil, fmt.Errorf("task %s: remove the leftover volumes of attempt %d: %w", a.TaskID, a.Attempt, err)
		}
	}
	dirs := []string{l.Commands(), l.Claimed(), l.Reports(), l.Watchers(), l.Sessions(),
		l.ProjectContext(), l.TaskContext(a.TaskID), l.RepoMapCache()}
	if a.Rel != "" {
		dirs = append(dirs, filepath.Join(l.Root, filepath.FromSlash(a.Rel))) // the copy's mount point
	} else {
		dirs = append(dirs, l.Workspace())
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("task %s: the attempt's own volumes: %w", a.TaskID, err)
		}
	}
	cmd, err := protocol.ReadRegular(v.CommandFile(a.Files()), protocol.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("task %s: the command to give the attempt: %w", a.TaskID, err)
	}
	if err := os.WriteFile(l.CommandFile(a.TaskID), cmd, 0o644); err != nil {
		return nil, err
	}
	if err := copyTree(v.ProjectContext(), l.ProjectContext()); err != nil {
		return nil, fmt.Errorf("task %s: the project context: %w", a.TaskID, err)
	}
	if err := copyTree(v.TaskContext(a.TaskID), l.TaskContext(a.TaskID)); err != nil {
		return nil, fmt.Errorf("task %s: the task context: %w", a.TaskID, err)
	}
	if mem, err := protocol.ReadRegular(v.Memory(), memoryImportCap); err == nil {
		aio.memory = mem
		if err := os.WriteFile(l.Memory(), mem, 0o644); err != nil {
			return nil, err
		}
	}
	// Best effort: without them the attempt starts a new session or maps
	// the repository cold.
	_ = copyFile(filepath.Join(v.Sessions(), aio.session), filepath.Join(l.Sessions(), aio.session), sessionImportCap)
	for _, c := range repomap.CacheFiles(v.RepoMapCache(), toolset.AttemptsRepoMapKey) {
		_ = copyFile(c, filepath.Join(l.RepoMapCache(), filepath.Base(c)), cacheImportCap)
	}
	return aio, nil
}

// collectIO takes back what the attempt's agent left in its own volumes,
// once its container is gone: session, memory and repo map cache always,
// its report only when codingagent ended normally (code 0: it wrote the
// report last, after stopping every other process of its container), and
// returns whether a report of this attempt is now in reports/. The own
// volumes are removed after.
func (d *Docker) collectIO(aio *attemptIO, code int) (bool, error) {
	defer func() {
		if err := removeTree(aio.l.Root); err != nil {
			d.log.Warn("remove the attempt's own volumes", "dir", aio.l.Root, "err", err)
		}
	}()
	d.importSession(aio)
	d.importMemory(aio)
	d.importCache(aio)
	if code != 0 {
		return false, nil
	}
	rel := relTo(aio.l.Root, aio.l.ReportFile(aio.task))
	data, err := readBeneath(aio.l.Root, rel, protocol.MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("the attempt's report: %w", err)
	}
	rep, err := protocol.ParseReport(rel, data)
	if err != nil {
		return false, err
	}
	if rep.ID != aio.task || rep.RunID != d.opts.RunID || rep.Attempt != aio.attempt {
		return false, fmt.Errorf("the report in %s is of task %s, run %s, attempt %d, not of this attempt (task %s, run %s, attempt %d)",
			rel, rep.ID, rep.RunID, rep.Attempt, aio.task, d.opts.RunID, aio.attempt)
	}
	if err := protocol.WriteReport(d.opts.Volumes.ReportFile(aio.stem), rep); err != nil {
		return false, err
	}
	return true, nil
}

func (d *Docker) importSession(aio *attemptIO) {
	data, err := readBeneath(aio.l.Root, relTo(aio.l.Root, filepath.Join(aio.l.Sessions(), aio.session)), sessionImportCap)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("the attempt's session is not kept", "task", aio.task, "attempt", aio.attempt, "err", err)
		}
		return
	}
	if err := d.writeVolumes(filepath.Join(d.opts.Volumes.Sessions(), aio.session), data); err != nil {
		d.log.Warn("keep the attempt's session", "task", aio.task, "err", err)
	}
}

// importMemory merges what the agent made of the memory it was given into
// the run's: its file as it is when nobody changed the run's meanwhile,
// else the lines it added that the run's does not have, appended.
func (d *Docker) importMemory(aio *attemptIO) {
	data, err := readBeneath(aio.l.Root, relTo(aio.l.Root, aio.l.Memory()), memoryImportCap)
	if err != nil || bytes.Equal(data, aio.memory) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("the attempt's memory is not kept", "task", aio.task, "attempt", aio.attempt, "err", err)
		}
		return
	}
	host := d.opts.Volumes.Memory()
	now, err := protocol.ReadRegular(host, memoryImportCap)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn("the run's memory file", "err", err)
		return
	}
	merged := data
	if !bytes.Equal(now, aio.memory) {
		merged = mergeLines(now, data)
	}
	if err := d.writeVolumes(host, merged); err != nil {
		d.log.Warn("keep the attempt's memory", "task", aio.task, "err", err)
	}
}

// mergeLines is base with the lines of add it lacks appended.
func mergeLines(base, add []byte) []byte {
	have := map[string]bool{}
	for l := range strings.SplitSeq(string(base), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	out := bytes.TrimRight(base, "\n")
	for l := range strings.SplitSeq(string(add), "\n") {
		if t := strings.TrimSpace(l); t != "" && !have[t] {
			out = append(append(out, '\n'), l...)
			have[t] = true
		}
	}
	return append(out, '\n')
}

// importCache keeps the repo map the attempt's agent parsed for the next
// attempts' (only they read that cache file: the planner's is another).
func (d *Docker) importCache(aio *attemptIO) {
	for _, c := range repomap.CacheFiles(aio.l.RepoMapCache(), toolset.AttemptsRepoMapKey) {
		data, err := readBeneath(aio.l.Root, relTo(aio.l.Root, c), cacheImportCap)
		if err != nil {
			continue
		}
		_ = d.writeVolumes(filepath.Join(d.opts.Volumes.RepoMapCache(), filepath.Base(c)), data)
	}
}

// mirrorEvents copies the attempt's events file, as its agent appends to
// it, onto the host's reports/ while the container runs (progress lines
// and the web view), through openBeneath and capped, until ctx ends; a last
// pass then takes what the agent wrote before it exited.
func (d *Docker) mirrorEvents(ctx context.Context, aio *attemptIO) {
	rel := relTo(aio.l.Root, aio.l.EventsFile(aio.task))
	w := &output.CappedFile{Path: d.opts.Volumes.EventsFile(aio.stem), Limit: layout.EventsMirrorCap}
	defer w.Close()
	var off int64
	pass := func() {
		f, err := openBeneath(aio.l.Root, rel)
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return
		}
		n, _ := io.Copy(w, io.LimitReader(f, layout.EventsMirrorCap-off))
		off += n
	}
	t := time.NewTicker(eventsPoll)
	defer t.Stop()
	for {
		pass()
		select {
		case <-ctx.Done():
			pass()
			return
		case <-t.C:
		}
	}
}

// relTo is p relative to root, which it lies under by construction.
func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return rel
}

// copyTree copies the regular files and directories under src (the host's
// own context, written by planagent) into dst; links and anything else are
// left out. A missing src is an empty tree.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(target, 0o755)
		case e.Type().IsRegular():
			return copyFile(p, target, protocol.MaxFileSize*16)
		}
		return nil
	})
}

// copyFile copies the regular file src (no link followed) to dst.
func copyFile(src, dst string, limit int64) error {
	data, err := protocol.ReadRegular(src, limit)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// writeVolumes replaces the file at path, under the volumes, by data
// (temp file, fsync, rename), following no link on the way (safefs).
func (d *Docker) writeVolumes(path string, data []byte) error {
	root, err := safefs.OpenRoot(d.opts.Volumes.Root, d.log)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.WriteFileAtomic(path, data, 0o644)
}

// removeTree removes dir, which a container wrote: directories it made
// unreadable or unwritable to its owner (the operator, whose uid the
// container ran as) are made so first; links are removed, never followed.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	// WalkDir calls back for a directory before it reads it: the chmod
	// comes first.
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
