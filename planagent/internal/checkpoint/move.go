package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// entry is a file of a commit's tree.
type entry struct {
	mode, blob string
}

// Advance moves HEAD (the branch, or a detached HEAD) from old to new and
// the workspace's files with it. Only the files that differ between the two
// commits are written or removed, and only when each is still as old has
// it (or already as new has it: a move cut short by a crash is finished by
// running it again, index included); any other content is someone's work,
// so nothing is changed and the error names those files. old and new need
// not be related: rollback moves back the same way. A move that fails half
// way (the index locked by another git command) is put back, so HEAD, the
// index and the files never disagree with what the caller recorded. The
// objects of new that wait with the pending ones (a task's) enter the
// repository just before the branch moves, and leave it again when the
// move is put back.
func (r *Repo) Advance(ctx context.Context, old, new string) error {
	head, err := r.Head(ctx)
	if err != nil {
		return err
	}
	if head != old && head != new {
		return fmt.Errorf("%w: HEAD is at %s, not at %s where the run left it", ErrMoved, short(head), short(old))
	}
	trees := map[string]bool{}
	paths, from, to, err := r.diffTreesBatch(old, new, trees)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		if wrote, err := r.moveFiles(ctx, paths, from, to); err != nil {
			if wrote {
				// Cut short (a blob that could not be read, a full
				// disk): what was written goes back.
				return r.putBack(ctx, paths, from, to, err)
			}
			return err
		}
	}
	// Before the branch names new: a ref never names an object the
	// repository lacks, whatever happens next.
	admitted, err := r.admit(new, trees, to)
	if err != nil {
		err = errors.Join(err, r.unadmit(admitted))
		return r.putBack(ctx, paths, from, to, fmt.Errorf("bring the objects of %s into the repository: %w", short(new), err))
	}
	if head == new {
		// A redo: the branch moved before the crash; the index may not have.
		return r.readTree(ctx, new)
	}
	// The branch and the index are each written by a git process of its
	// own under its own lock: both at once, and either put back when the
	// other fails. A crash between the two is finished by a redo (HEAD at
	// old: the index is written again; at new: read-tree).
	var refErr, idxErr error
	var wg sync.WaitGroup
	wg.Go(func() { idxErr = r.updateIndex(ctx, paths, to) })
	refErr = r.moveRef(ctx, old, new)
	wg.Wait()
	// Not under ctx: a cancelled move must still be put back.
	undo := context.WithoutCancel(ctx)
	switch {
	case refErr == nil && idxErr == nil:
		return nil
	case refErr == nil:
		if uerr := r.moveRef(undo, new, old); uerr != nil {
			// The branch names new still: its objects stay.
			return fmt.Errorf("%w (and moving %s back failed: %v; run `git reset --hard %s` once nothing else uses the repository)", idxErr, r.Branch(), uerr, short(new)) //nolint:errorlint // callers match the move's error, not the undo's
		}
		return r.putBack(ctx, paths, from, to, r.unadmitAfter(idxErr, admitted))
	case idxErr == nil:
		if uerr := r.updateIndex(undo, paths, from); uerr != nil {
			// The index names new's blobs still: they stay.
			return fmt.Errorf("%w (and putting the index back failed: %v; run `git reset` once nothing else uses the repository)", refErr, uerr) //nolint:errorlint // callers match the move's error, not the undo's
		}
	}
	return r.putBack(ctx, paths, from, to, r.unadmitAfter(refErr, admitted))
}

// unadmitAfter takes the objects a move admitted back out once its branch
// is back at old, and returns the move's error cause (with the undo's
// when that failed too: the objects then stay, unreachable).
func (r *Repo) unadmitAfter(cause error, admitted []string) error {
	if err := r.unadmit(admitted); err != nil {
		return fmt.Errorf("%w (and %v)", cause, err) //nolint:errorlint // callers match the move's error, not the undo's
	}
	return cause
}

// moveRef moves the branch (or a detached HEAD) from old to new, only if it
// is still at old.
func (r *Repo) moveRef(ctx context.Context, old, new string) error {
	args := []string{"update-ref", "-m", "codeagent: checkpoint"}
	if r.branch == "" {
		args = append(args, "--no-deref", "HEAD")
	} else {
		args = append(args, r.branch)
	}
	if _, err := r.g.run(ctx, append(args, new, old)...); err != nil {
		return fmt.Errorf("move %s to %s: %w", r.Branch(), short(new), err)
	}
	return nil
}

// readTree makes the index follow HEAD; the files already do.
func (r *Repo) readTree(ctx context.Context, commit string) error {
	if _, err := r.g.run(ctx, "read-tree", commit); err != nil {
		return fmt.Errorf("update the index to %s: %w", short(commit), err)
	}
	_, _ = r.g.run(ctx, "update-index", "-q", "--refresh")
	return nil
}

// updateIndex makes the index follow HEAD after a move of paths to the
// entries to: only those entries are written (one update-index), so the
// others keep their stat data and nothing re-reads the whole tree, as
// read-tree and a refresh of every file did. The new entries have none:
// git hashes those few files again the next time it looks.
func (r *Repo) updateIndex(ctx context.Context, paths []string, to map[string]entry) error {
	if len(paths) == 0 {
		return nil
	}
	zero := ""
	var removals, additions []string
	for _, p := range paths {
		e := to[p]
		if e.blob == "" {
			removals = append(removals, p)
			continue
		}
		zero = strings.Repeat("0", len(e.blob))
		additions = append(additions, e.mode+" "+e.blob+"\t"+p+"\x00")
	}
	if zero == "" {
		zero = strings.Repeat("0", 40)
		if r.objectFormat == "sha256" {
			zero = strings.Repeat("0", 64)
		}
	}
	var in strings.Builder
	// Removals first: a file may replace a directory the move emptied.
	for _, p := range removals {
		in.WriteString("0 " + zero + "\t" + p + "\x00")
	}
	for _, a := range additions {
		in.WriteString(a)
	}
	if _, err := r.g.runIn(ctx, []byte(in.String()), "update-index", "-z", "--add", "--replace", "--index-info"); err != nil {
		return fmt.Errorf("update the index for %d files: %w", len(paths), err)
	}
	return nil
}

// putBack returns the files a failed move wrote to how old has them, and
// returns cause.
func (r *Repo) putBack(ctx context.Context, paths []string, from, to map[string]entry, cause error) error {
	if len(paths) == 0 {
		return cause
	}
	if _, err := r.moveFiles(context.WithoutCancel(ctx), paths, to, from); err != nil {
		return fmt.Errorf("%w (and putting the files back failed: %w)", cause, err)
	}
	return cause
}

// moveFiles writes the workspace's paths from the entries from to those of
// to (a missing entry: no file). wrote says whether it changed any file
// before an error. Each blob streams from cat-file into its file: a file
// is never held whole in memory.
func (r *Repo) moveFiles(ctx context.Context, paths []string, from, to map[string]entry) (wrote bool, err error) {
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	cur, err := r.current(ctx, paths)
	if err != nil {
		return false, err
	}
	for _, p := range paths {
		// A directory where the new tree has a file: it is in the way only
		// if it holds more than the files this move removes.
		if cur[p] == isDir && from[p].blob == "" && r.onlyMoved(p, want) {
			cur[p] = ""
		}
	}
	var changed []string
	for _, p := range paths {
		c := cur[p]
		if c == from[p].blob || c == to[p].blob {
			continue
		}
		changed = append(changed, p)
	}
	if len(changed) > 0 {
		return false, &ChangedError{Files: changed}
	}
	// Removals first, deepest first, then writes: a directory can become a
	// file or a link, and a file a directory.
	order := append([]string(nil), paths...)
	sort.SliceStable(order, func(i, j int) bool {
		ri, rj := to[order[i]].blob == "", to[order[j]].blob == ""
		if ri != rj {
			return ri
		}
		if ri {
			return order[i] > order[j]
		}
		return order[i] < order[j]
	})
	for _, p := range order {
		e := to[p]
		if e.mode == "160000" || (cur[p] == e.blob && e.blob != "") {
			continue
		}
		full, err := r.target(p)
		if err != nil {
			return wrote, err
		}
		if e.blob == "" {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				return wrote, fmt.Errorf("remove %s: %w", p, err)
			}
			wrote = true
			r.removeEmptyParents(full)
			continue
		}
		if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
			// Emptied by the removals above (onlyMoved said so).
			if err := os.Remove(full); err != nil {
				return wrote, fmt.Errorf("write %s: a directory is in the way: %w", p, err)
			}
			wrote = true
		}
		if err := r.writeEntry(full, e); err != nil {
			return wrote, fmt.Errorf("write %s: %w", p, err)
		}
		wrote = true
	}
	return wrote, nil
}

// isDir is current's hash of a directory.
const isDir = "a directory"

// onlyMoved reports whether the workspace's directory rel holds nothing but
// paths of this move (directories aside).
func (r *Repo) onlyMoved(rel string, want map[string]bool) bool {
	root := filepath.Join(r.workTree, filepath.FromSlash(rel))
	ok := true
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return filepath.SkipAll
		}
		if d.IsDir() {
			return nil
		}
		sub, _ := filepath.Rel(r.workTree, p)
		if !want[filepath.ToSlash(sub)] {
			ok = false
			return filepath.SkipAll
		}
		return nil
	})
	return ok
}

// target is where the tree's path rel is in the workspace. It refuses a
// path under a link: a path of the tree is never written or removed
// through a link in the workspace (to somewhere outside it).
func (r *Repo) target(rel string) (string, error) {
	parts := strings.Split(rel, "/")
	p := r.workTree
	for _, part := range parts[:len(parts)-1] {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("refuse the path %q of the tree", rel)
		}
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			break // missing: made as a directory by writeEntry
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("refuse to write %s: %s in the workspace is a link", rel, strings.TrimPrefix(p, r.workTree+"/"))
		}
	}
	return filepath.Join(r.workTree, filepath.FromSlash(rel)), nil
}

// removeEmptyParents removes the directories above full that a removal
// left empty, as git does, up to the workspace.
func (r *Repo) removeEmptyParents(full string) {
	for d := filepath.Dir(full); d != r.workTree && strings.HasPrefix(d, r.workTree+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return
		}
	}
}

// ChangedError names workspace files changed by someone else since the
// run's last checkpoint.
type ChangedError struct{ Files []string }

func (e *ChangedError) Error() string {
	return "files changed in the workspace since the run's last checkpoint: " + strings.Join(e.Files, ", ") +
		" (commit or revert them first)"
}

// current hashes the workspace's files at paths as git would; a missing
// file is "".
func (r *Repo) current(ctx context.Context, paths []string) (map[string]string, error) {
	m := map[string]string{}
	var regular []string
	for _, p := range paths {
		full := filepath.Join(r.workTree, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		switch {
		case err != nil:
			m[p] = ""
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return nil, err
			}
			h, err := r.g.runIn(ctx, []byte(target), "hash-object", "--stdin")
			if err != nil {
				return nil, err
			}
			m[p] = strings.TrimSpace(h)
		case fi.Mode().IsRegular():
			regular = append(regular, p)
		case fi.IsDir():
			m[p] = isDir
		default:
			m[p] = "not a file"
		}
	}
	if len(regular) == 0 {
		return m, nil
	}
	out, err := r.g.runIn(ctx, []byte(strings.Join(regular, "\n")+"\n"), "hash-object", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	hashes := strings.Fields(out)
	if len(hashes) != len(regular) {
		return nil, fmt.Errorf("git hash-object: %d hashes for %d files", len(hashes), len(regular))
	}
	for i, p := range regular {
		m[p] = hashes[i]
	}
	return m, nil
}

// maxLinkTarget is the longest link target read from a blob: Linux's
// PATH_MAX, and far more than any a tree of a repository holds.
const maxLinkTarget = 4096

// writeEntry writes one file of a tree: atomically (temp file and rename),
// with the tree's executable bit, or as a symlink. The blob streams into
// the temp file.
func (r *Repo) writeEntry(full string, e entry) error {
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	if e.mode == "120000" {
		target, err := r.cat.blobBytes(e.blob, maxLinkTarget)
		if err != nil {
			return err
		}
		_ = os.Remove(full)
		return os.Symlink(string(bytes.TrimRight(target, "\x00")), full)
	}
	perm := os.FileMode(0o644)
	if e.mode == "100755" {
		perm = 0o755
	}
	// The temp file's name is fixed per target, so a move killed between
	// writing it and renaming it leaves nothing behind once redone: the
	// redo writes the same target through the same temp file.
	base := filepath.Base(full)
	if len(base) > 200 {
		base = base[:200]
	}
	tmp, err := os.OpenFile(filepath.Join(filepath.Dir(full), "."+base+".codeagent-write"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := r.cat.blobTo(e.blob, -1, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), full)
}

// Rollback moves the workspace and HEAD back to the checkpoint to. It
// refuses, naming the files, when the workspace differs from HEAD; the
// commits it leaves behind stay reachable under refs/codeagent/rollback/.
func (r *Repo) Rollback(ctx context.Context, to string) error {
	dirty, err := r.Dirty(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return &ChangedError{Files: dirty}
	}
	head, err := r.Head(ctx)
	if err != nil {
		return err
	}
	if _, err := r.g.run(ctx, "update-ref", "refs/codeagent/rollback/"+head, head); err != nil {
		return err
	}
	return r.Advance(ctx, head, to)
}
