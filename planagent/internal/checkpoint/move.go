package checkpoint

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// entry is a file of a commit's tree.
type entry struct {
	mode, blob string
}

// workspaceMove is the one part that writes the user's workspace and moves
// their branch: the move from one checkpoint to another (Advance,
// Rollback), and what a move cut short leaves (StaleLock). It reads the
// repository's objects through store, brings a task's pending objects in
// with the move (admit) and makes the keep ref of a task's commit in the
// same transaction as the branch's move.
type workspaceMove struct {
	g          git
	cat        *catFile
	store      *objectStore
	pending    pendingObjects
	keeps      *keepRefs
	gitDir     string
	workTree   string
	branch     string // refs/heads/…, or "" for a detached HEAD
	objectsDir string
}

// Advance moves HEAD (the branch, or a detached HEAD) from old to new and
// the workspace's files with it. git writes the workspace: a two-tree
// `read-tree -m -u old new` in the user's repository, with the user's own
// config and environment (their smudge filters, line endings, ident,
// sparse checkout, case-folding file system), which writes only the files
// that differ between the two commits and refuses when one of them is not
// as the index has it: then nothing is changed and the error names those
// files (ChangedError). The branch then moves with `update-ref`, under
// git's lock and only if it is still at old; when that fails the files go
// back the same way. A move cut short at any point is finished by running
// it again: files already as new has them are taken as the move's own.
// old and new need not be related: rollback moves back the same way. The
// objects of new that wait with the pending ones (a task's) enter the
// repository before git reads them, and leave it again when the move is
// put back.
func (r *Repo) Advance(ctx context.Context, old, new string) error {
	return r.move.advance(ctx, old, new)
}

// advance is Advance.
func (m *workspaceMove) advance(ctx context.Context, old, new string) error {
	if err := m.onBranch(ctx); err != nil {
		return err
	}
	head, err := headOf(ctx, m.cat)
	if err != nil {
		return err
	}
	if head != old && head != new {
		// Commits of the user's on top of old are told apart from a branch
		// reset or rewritten: the caller can go on on top of them.
		return &MovedError{Head: head, Old: old, Ahead: isAncestor(ctx, m.g, old, head)}
	}
	pending := m.pending.has(new)
	trees := map[string]bool{}
	paths, from, to, err := m.store.diffTreesBatch(old, new, trees)
	if err != nil {
		return err
	}
	if err := m.linkOnTheWay(paths, from, to); err != nil {
		return err
	}
	// Once under way the move is not cut short by ctx: a git killed in
	// the middle leaves its lock in the user's repository.
	ctx = context.WithoutCancel(ctx)
	// Before the index or a ref names new's objects: neither ever names
	// an object the repository lacks, whatever happens next.
	admitted, err := m.admit(new, trees, to)
	if err != nil {
		return m.unadmitAfter(fmt.Errorf("bring the objects of %s into the repository: %w", short(new), err), admitted)
	}
	if err := m.checkout(ctx, old, new, paths, from, to); err != nil {
		if head == new {
			return err // the branch names new: its objects stay
		}
		return m.unadmitAfter(err, admitted)
	}
	if head == new {
		return nil // a redo: the branch moved before the crash
	}
	if err := m.moveRef(ctx, old, new, pending); err != nil {
		if uerr := m.checkout(ctx, new, old, paths, to, from); uerr != nil {
			// The index names new's blobs still: they stay.
			return fmt.Errorf("%w (and putting the files back failed: %v; run `git read-tree -m -u %s %s` once nothing else uses the repository)", err, uerr, short(new), short(old)) //nolint:errorlint // callers match the move's error, not the undo's
		}
		return m.unadmitAfter(err, admitted)
	}
	return nil
}

// unadmitAfter takes the objects a move admitted back out once its branch
// is back at old, and returns the move's error cause (with the undo's
// when that failed too: the objects then stay, unreachable).
func (m *workspaceMove) unadmitAfter(cause error, admitted []string) error {
	if err := m.pending.unadmit(admitted); err != nil {
		return fmt.Errorf("%w (and %v)", cause, err) //nolint:errorlint // callers match the move's error, not the undo's
	}
	return cause
}

// moveRef moves the branch (or a detached HEAD) from old to new, only if it
// is still at old, under git's lock. With keep, the same transaction makes
// new's keep ref (a task's commit, moved to for the first time).
func (m *workspaceMove) moveRef(ctx context.Context, old, new string, keep bool) error {
	var in strings.Builder
	ref := m.branch
	if ref == "" {
		ref = "HEAD"
		in.WriteString("option no-deref\n")
	}
	in.WriteString("update " + ref + " " + new + " " + old + "\n")
	if keep {
		in.WriteString("update " + keepRef(new) + " " + new + "\n")
	}
	if _, err := m.g.runIn(ctx, []byte(in.String()), "update-ref", "-m", "codeagent: checkpoint", "--stdin"); err != nil {
		return fmt.Errorf("move %s to %s: %w", strings.TrimPrefix(m.branch, "refs/heads/"), short(new), err)
	}
	if keep {
		m.keeps.madeBy(new)
	}
	return nil
}

// checkout has git bring the index and the workspace from the commit old
// to new (paths are what differs, from and to their entries). When git
// refuses, the index's stat data is refreshed and it is tried again; then
// the files of paths already as new has them (a move cut short) are
// taken into the index as new's, and it is tried once more; files that
// are as neither commit has them are someone's work: a ChangedError
// names them and nothing is written.
func (m *workspaceMove) checkout(ctx context.Context, old, new string, paths []string, from, to map[string]entry) error {
	err := m.readTree(ctx, old, new)
	if err == nil || len(paths) == 0 {
		return err
	}
	_, _ = m.g.run(ctx, "update-index", "-q", "--refresh")
	if err = m.readTree(ctx, old, new); err == nil {
		return nil
	}
	cur, cerr := m.current(ctx, paths)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	var changed, done, cut []string
	for _, p := range paths {
		switch c := cur[p]; {
		case c == from[p].blob, c == isDir && from[p].blob == "":
			// As old has it (a directory new makes a file: git said
			// why when it holds more than old's files).
		case c == to[p].blob:
			if c != "" && to[p].mode != "160000" {
				done = append(done, p)
			}
		case m.cutShort(ctx, p, to[p]):
			cut = append(cut, p)
		default:
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		return &ChangedError{Files: changed}
	}
	if len(done) == 0 && len(cut) == 0 {
		return err
	}
	// A file git was killed writing is written again.
	for _, p := range cut {
		if err := os.Remove(filepath.Join(m.workTree, filepath.FromSlash(p))); err != nil {
			return err
		}
	}
	if len(done) == 0 {
		return m.readTree(ctx, old, new)
	}
	var in strings.Builder
	for _, p := range done {
		in.WriteString(to[p].mode + " " + to[p].blob + "\t" + p + "\x00")
	}
	if _, err := m.g.runIn(ctx, []byte(in.String()), "update-index", "-z", "--add", "--replace", "--index-info"); err != nil {
		return fmt.Errorf("take the files a move cut short wrote into the index: %w", err)
	}
	if err := m.readTree(ctx, old, new); err != nil {
		return err
	}
	_, _ = m.g.run(ctx, "update-index", "-q", "--refresh")
	return nil
}

// linkOnTheWay refuses a move that would write a file of new under a
// link of the workspace that old does not track (git would replace the
// link, an ignored or untracked one of the user's, by a directory).
func (m *workspaceMove) linkOnTheWay(paths []string, from, to map[string]entry) error {
	seen := map[string]bool{}
	for _, p := range paths {
		if to[p].blob == "" {
			continue
		}
		for d := parentOf(p); d != "" && !seen[d]; d = parentOf(d) {
			seen[d] = true
			if from[d].mode == "120000" {
				continue // a link of old's that the move removes
			}
			if fi, err := os.Lstat(filepath.Join(m.workTree, filepath.FromSlash(d))); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("refuse to write %s: %s in the workspace is a link", p, d)
			}
		}
	}
	return nil
}

// cutShort reports whether the workspace's file p is a strict beginning
// of what git writes for e there (its smudge filter and line endings
// applied): a write of git's that a kill cut short (git writes a file in
// place). Writing it whole loses nothing that is there.
func (m *workspaceMove) cutShort(ctx context.Context, p string, e entry) bool {
	if e.blob == "" || (e.mode != "100644" && e.mode != "100755") {
		return false
	}
	full := filepath.Join(m.workTree, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	want, err := m.g.run(ctx, "cat-file", "--filters", "--path="+p, e.blob)
	if err != nil || fi.Size() >= int64(len(want)) {
		return false
	}
	got, err := os.ReadFile(full)
	return err == nil && strings.HasPrefix(want, string(got))
}

// readTree is git's two-tree merge of old to new into the index and the
// workspace.
func (m *workspaceMove) readTree(ctx context.Context, old, new string) error {
	if _, err := m.g.run(ctx, "read-tree", "-m", "-u", old, new); err != nil {
		return fmt.Errorf("update the workspace and its index to %s: %w", short(new), err)
	}
	return nil
}

// ChangedError names workspace files changed by someone else since the
// run's last checkpoint.
type ChangedError struct{ Files []string }

func (e *ChangedError) Error() string {
	return "files changed in the workspace since the run's last checkpoint: " + strings.Join(e.Files, ", ") +
		" (commit or revert them first)"
}

// isDir is current's hash of a directory.
const isDir = "a directory"

// current hashes the workspace's files at paths as git would (the user's
// clean filters and line endings applied); a missing file is "".
func (m *workspaceMove) current(ctx context.Context, paths []string) (map[string]string, error) {
	cur := map[string]string{}
	var regular []string
	for _, p := range paths {
		full := filepath.Join(m.workTree, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		switch {
		case err != nil:
			cur[p] = ""
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return nil, err
			}
			h, err := m.g.runIn(ctx, []byte(target), "hash-object", "--stdin")
			if err != nil {
				return nil, err
			}
			cur[p] = strings.TrimSpace(h)
		case fi.Mode().IsRegular():
			regular = append(regular, p)
		case fi.IsDir():
			cur[p] = isDir
		default:
			cur[p] = "not a file"
		}
	}
	if len(regular) == 0 {
		return cur, nil
	}
	out, err := m.g.runIn(ctx, []byte(strings.Join(regular, "\n")+"\n"), "hash-object", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	hashes := strings.Fields(out)
	if len(hashes) != len(regular) {
		return nil, fmt.Errorf("git hash-object: %d hashes for %d files", len(hashes), len(regular))
	}
	for i, p := range regular {
		cur[p] = hashes[i]
	}
	return cur, nil
}

// KeepForRollback keeps head, the commit a rollback takes off the branch,
// reachable under refs/codeagent/rollback/ (with the commits below it).
func (r *Repo) KeepForRollback(ctx context.Context, head string) error {
	return r.move.keepForRollback(ctx, head)
}

// keepForRollback is KeepForRollback.
func (m *workspaceMove) keepForRollback(ctx context.Context, head string) error {
	_, err := m.g.run(ctx, "update-ref", "refs/codeagent/rollback/"+head, head)
	return err
}

// StaleLock is the git lock a killed git command may have left in the
// repository (the index's, or the branch's), "" when there is none.
func (r *Repo) StaleLock() string { return r.move.staleLock() }

// staleLock is StaleLock.
func (m *workspaceMove) staleLock() string {
	locks := []string{filepath.Join(m.gitDir, "index.lock")}
	if m.branch != "" {
		// Refs are the common directory's (a linked worktree's too).
		locks = append(locks, filepath.Join(filepath.Dir(m.objectsDir), filepath.FromSlash(m.branch)+".lock"))
	} else {
		locks = append(locks, filepath.Join(m.gitDir, "HEAD.lock"))
	}
	for _, l := range locks {
		if _, err := os.Lstat(l); err == nil {
			return l
		}
	}
	return ""
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
	if err := r.move.keepForRollback(ctx, head); err != nil {
		return err
	}
	return r.move.advance(ctx, head, to)
}

// MovedError is a branch that is not where the run left it (Old): it is
// at Head, which holds Old and commits added on top of it when Ahead.
type MovedError struct {
	Head, Old string
	Ahead     bool
}

func (e *MovedError) Error() string {
	if e.Ahead {
		return fmt.Sprintf("%v: HEAD is at %s, commits on top of %s where the run left it", ErrMoved, short(e.Head), short(e.Old))
	}
	return fmt.Sprintf("%v: HEAD is at %s, not at %s where the run left it", ErrMoved, short(e.Head), short(e.Old))
}

// Is makes a MovedError an ErrMoved.
func (e *MovedError) Is(target error) bool { return target == ErrMoved }

// SwitchedError is a checkout no longer on the branch the run commits to:
// the user switched to another branch (Now) or detached HEAD (Now "").
// Nothing was moved: the run's branch is not the checkout's any more, and
// the checkout's files belong to what the user switched to.
type SwitchedError struct{ Branch, Now string }

func (e *SwitchedError) Error() string {
	now := "a detached HEAD"
	if e.Now != "" {
		now = "branch " + e.Now
	}
	want := "branch " + e.Branch
	if e.Branch == "" {
		want = "a detached HEAD"
	}
	return fmt.Sprintf("the workspace is on %s, not on %s that the run commits to", now, want)
}

// onBranch refuses (SwitchedError) a move while HEAD is not what it was
// when the repository was opened: another branch checked out, or a
// detached HEAD where a branch was (or a branch where HEAD was detached).
func (m *workspaceMove) onBranch(ctx context.Context) error {
	ref, err := m.headRef(ctx)
	if err != nil {
		return err
	}
	if ref == m.branch {
		return nil
	}
	return &SwitchedError{Branch: strings.TrimPrefix(m.branch, "refs/heads/"), Now: strings.TrimPrefix(ref, "refs/heads/")}
}

// headRef is the branch HEAD names (refs/heads/…), "" when detached. The
// files backend's HEAD file says it in one line (read here: a move runs no
// git process more than its read-tree and update-ref); git is asked when
// that file is reftable's stub or not one line of either form.
func (m *workspaceMove) headRef(ctx context.Context) (string, error) {
	if b, err := os.ReadFile(filepath.Join(m.gitDir, "HEAD")); err == nil {
		line := strings.TrimSuffix(string(b), "\n")
		if ref, ok := strings.CutPrefix(line, "ref: "); ok && ref != "refs/heads/.invalid" && !strings.ContainsAny(ref, " \n") {
			return ref, nil
		}
		if len(line) == 40 || len(line) == 64 {
			if _, err := hex.DecodeString(line); err == nil {
				return "", nil // detached
			}
		}
	}
	ref, err := m.g.line(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		if exitCode(err) != 1 {
			return "", fmt.Errorf("read HEAD: %w", err)
		}
		return "", nil // detached
	}
	return ref, nil
}
