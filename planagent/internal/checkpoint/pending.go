package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A task's objects (its squash's, its merge's) wait outside the user's
// repository until the move that puts its commit on the branch: in a
// pending objects directory of the host's (pendingDir), which every git
// command on the repository reads as an alternate. An attempt that fails
// anywhere between (its acceptance, a conflict, a move refused or cut
// short) leaves nothing in the user's objects: DrainPool empties the
// pending directory when the run ends. The move (admit) brings in exactly
// what the new commit holds that the branch's commit lacks, before the
// branch moves, and takes it out again when the move is put back. A crash
// in between keeps the directory: resume's move finds what it needs there.

// pendingName is the pending objects directory's name in the checkpoint
// repository's codeagent directory (not matched by DrainPool's pattern of
// leftovers, objects*-*: it is emptied there, never removed, as git warns
// about an alternate that does not exist).
const pendingName = "pending-objects"

// preparePending makes the pending objects directory and has every git
// command of the repository read it. A repository this process cannot
// write to (a read-only look, `planagent status`) goes without: no
// squash can be made there anyway.
func (r *Repo) preparePending() {
	r.pending.objects = r.objectsDir
	p := filepath.Join(filepath.Dir(r.private), pendingName)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return
	}
	r.pending.dir = p
	r.g.env = []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + alternates(p)}
}

// pendingObjects is the pending objects directory (dir, "" when it could
// not be made) and the repository's objects directory its objects move to.
type pendingObjects struct {
	dir     string
	objects string
}

// alternates is the alternates of a command that reads the
// repository's objects through GIT_ALTERNATE_OBJECT_DIRECTORIES (its
// own objects directory being a quarantine or the cache): the repository's
// and the pending ones.
func (p pendingObjects) alternates() string {
	if p.dir == "" {
		return alternates(p.objects)
	}
	return alternates(p.objects, p.dir)
}

// alternates is a value of GIT_ALTERNATE_OBJECT_DIRECTORIES: the
// directories separated by colons, each quoted as git reads a quoted one
// when it holds a colon or starts with a double quote.
func alternates(dirs ...string) string {
	quoted := make([]string, len(dirs))
	for i, d := range dirs {
		if strings.ContainsAny(d, ":\"\\\n") || strings.HasPrefix(d, "\"") {
			d = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(d) + `"`
		}
		quoted[i] = d
	}
	return strings.Join(quoted, ":")
}

// target is where a squash's or a merge's objects go: the
// pending directory, or the repository's objects without one.
func (p pendingObjects) target() string {
	if p.dir == "" {
		return p.objects
	}
	return p.dir
}

// has reports whether the object id is a loose object of the
// pending directory (a commit of a task not moved to yet).
func (p pendingObjects) has(id string) bool {
	if p.dir == "" || len(id) < 4 {
		return false
	}
	_, err := os.Lstat(filepath.Join(p.dir, id[:2], id[2:]))
	return err == nil
}

// admit brings new's objects that are pending into the repository's
// objects: new's commit, and the trees and blobs it holds that the
// branch's commit does not (trees, and the blobs of to: what the move's
// diff found). It returns what it moved, for unadmit. A first parent of
// new still pending (a merge onto a commit never moved to) brings in
// every pending object, as do pending packs (git add writes one for a
// file past core.bigFileThreshold): what they hold is not listed here.
func (m *workspaceMove) admit(new string, trees map[string]bool, to map[string]entry) ([]string, error) {
	if m.pending.dir == "" {
		return nil, nil
	}
	parent, err := m.store.firstParent(new)
	if err != nil {
		return nil, err
	}
	if m.pending.has(parent) {
		return m.pending.admitAll()
	}
	return m.pending.admit(new, trees, to)
}

// admit is workspaceMove.admit's move of new, its trees and the blobs of to, and
// the pending packs, once new's first parent is known to be in the
// repository.
func (p pendingObjects) admit(new string, trees map[string]bool, to map[string]entry) ([]string, error) {
	var moved []string
	admitOne := func(id string) error {
		if len(id) < 4 {
			return nil
		}
		rel := filepath.Join(id[:2], id[2:])
		ok, err := moveIfAbsent(filepath.Join(p.dir, rel), filepath.Join(p.objects, rel))
		if ok {
			moved = append(moved, rel)
		}
		return err
	}
	if err := admitOne(new); err != nil {
		return moved, err
	}
	for id := range trees {
		if err := admitOne(id); err != nil {
			return moved, err
		}
	}
	for _, e := range to {
		if e.blob != "" && e.mode != "160000" {
			if err := admitOne(e.blob); err != nil {
				return moved, err
			}
		}
	}
	packs, err := p.admitPacks()
	return append(moved, packs...), err
}

// admitPacks moves the pending packs into the repository, each index
// after its pack as git does (a pack is used once its index is there).
func (p pendingObjects) admitPacks() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(p.dir, "pack"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		files = append(files, filepath.Join("pack", e.Name()))
	}
	return p.admitFiles(files)
}

// admitAll moves every pending object into the repository.
func (p pendingObjects) admitAll() ([]string, error) {
	files, err := listFiles(p.dir)
	if err != nil {
		return nil, err
	}
	return p.admitFiles(files)
}

// admitFiles moves files of the pending directory (relative paths) into
// the repository's objects, indexes last, and returns those it moved.
func (p pendingObjects) admitFiles(files []string) ([]string, error) {
	var moved, idxs []string
	for _, rel := range files {
		if strings.HasPrefix(filepath.Base(rel), "tmp_") {
			continue // a write cut short
		}
		if strings.HasSuffix(rel, ".idx") {
			idxs = append(idxs, rel)
			continue
		}
		ok, err := moveIfAbsent(filepath.Join(p.dir, rel), filepath.Join(p.objects, rel))
		if ok {
			moved = append(moved, rel)
		}
		if err != nil {
			return moved, err
		}
	}
	for _, rel := range idxs {
		ok, err := moveIfAbsent(filepath.Join(p.dir, rel), filepath.Join(p.objects, rel))
		if ok {
			moved = append(moved, rel)
		}
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// unadmit takes the objects admit moved back out of the repository, once
// the branch is back where it was: a move put back leaves nothing of the
// task's in the user's objects, and a later move (the task merged again)
// finds them pending. Indexes go first, so no pack is left without one.
func (p pendingObjects) unadmit(moved []string) error {
	var errs []error
	for _, pass := range []bool{true, false} {
		for _, rel := range moved {
			if strings.HasSuffix(rel, ".idx") != pass {
				continue
			}
			if _, err := moveIfAbsent(filepath.Join(p.objects, rel), filepath.Join(p.dir, rel)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("take the task's objects back out of the repository: %w", err)
	}
	return nil
}

// moveIfAbsent renames the object file from to to unless to is there
// already (objects are named by their content) or from is not: it
// reports whether it moved it.
func moveIfAbsent(from, to string) (bool, error) {
	if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if _, err := os.Lstat(to); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return false, err
	}
	if err := os.Rename(from, to); err != nil {
		return false, err
	}
	return true, nil
}

// drain empties the pending objects directory, which stays.
func (p pendingObjects) drain() error {
	if p.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(p.dir, e.Name())))
	}
	return errors.Join(errs...)
}
