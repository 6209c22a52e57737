// Package checkpoint keeps a run's checkpoints in git: one commit per
// completed task on top of the commit the run started from, attempt copies
// that can be thrown away, a merge of each attempt onto the integration
// state without touching any working tree, and a safe move of the user's
// files to the merged state.
//
// A workspace that is the top of a git repository uses that repository
// (mode "git"): the run's commits go on the checked-out branch, the user's
// history is never rewritten. Any other workspace gets a shadow repository
// under the volumes (mode "shadow") whose work tree is the workspace: the
// user's directory gets no .git.
//
// Nothing here runs `git clean`, `reset --hard` or a forced checkout over
// the user's files: the workspace only changes in Advance, where git's
// two-tree read-tree writes exactly the files that differ between two
// commits, with the user's own config, and refuses, naming them, when one
// of those files was changed by someone else meanwhile.
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Repo is the checkpoint repository of one workspace.
type Repo struct {
	g        git // commands on the integration repository and the workspace
	cat      *catFile
	mode     string
	gitDir   string
	workTree string
	branch   string   // refs/heads/…, or "" for a detached HEAD
	exclude  []string // workspace-relative paths never committed nor counted
	// snapshotted says Open made the shadow repository, its first commit
	// the workspace as it was then: Snapshot has nothing to add.
	snapshotted bool

	// The copies' own state, where no container reaches: the index each
	// copy had when it was made (copyState). In the repository's git dir.
	private string
	// user are the settings of the hardened commands that read or check
	// out a copy, from the user's config (userConfig), shared with the
	// parts that run such commands.
	user         *userSettings
	objectFormat string
	objectsDir   string // the repository's objects (a worktree's are in its common dir)
	commonDir    string // the git directory a worktree shares with its repository (its refs)
	// pending holds the objects of tasks not moved to yet (pending.go).
	pending pendingObjects
	// cache is where the copies' objects come from (cache.go).
	cache *objectCache
	// store reads the repository's objects and writes trees and commits,
	// with what it learnt of them (batch.go, trees.go).
	store *objectStore

	keeps       keepRefs       // the keep refs made (keep.go)
	move        *workspaceMove // the workspace's and the branch's moves (move.go)
	copies      *copyMaker     // what makes a copy hold a commit (copy.go, checkout.go)
	squashes    *squasher      // a task's commit of its copy (squash.go, limits.go)
	quarantines quarantines    // squashes' and merges' new objects (quarantine.go)

	// states are what the host keeps of each copy (state.go); pool the
	// copies kept for reuse and what is known of each copy (pool.go).
	states copyStates
	pool   copyPool
}

// Mode is "git" (the user's repository) or "shadow".
func (r *Repo) Mode() string { return r.mode }

// GitDir is the repository's git directory (absolute).
func (r *Repo) GitDir() string { return r.gitDir }

// Branch is the branch the run commits to, "" when HEAD is detached.
func (r *Repo) Branch() string { return strings.TrimPrefix(r.branch, "refs/heads/") }

// WorkTree is the workspace.
func (r *Repo) WorkTree() string { return r.workTree }

// ShadowDir is where the shadow repository of workspace lives under dir
// (the volumes' checkpoints/): one per workspace path, shared by its runs.
func ShadowDir(dir, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return filepath.Join(dir, hex.EncodeToString(sum[:6])+".git")
}

// Open prepares the checkpoints of workspace. A workspace at the top of a
// git repository uses it; any other gets a shadow repository at shadowDir
// (made on first use, with a commit of the workspace as it is; Snapshot
// brings it up to date before a new run). exclude lists paths inside the
// workspace (e.g. the volumes) that are never committed.
func Open(ctx context.Context, workspace, shadowDir string, exclude []string) (*Repo, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	r := &Repo{workTree: ws}
	for _, e := range exclude {
		if rel, ok := inside(ws, e); ok {
			r.exclude = append(r.exclude, rel)
		}
	}
	// Each open asks git where things are in as few processes as it can:
	// planagent opens the repository once per command, and each git
	// process costs milliseconds, tens of them on a loaded machine.
	loc, _ := locate(ctx, git{dir: ws}, true) // no repository here: a shadow one
	if loc.gitDir != "" && samePath(loc.top, ws) {
		r.mode, r.gitDir, r.g = "git", loc.gitDir, git{dir: ws}
		if loc.head == "" {
			return nil, fmt.Errorf("checkpoints in %s: the repository has no commit yet: commit something first (git commit --allow-empty -m init)", ws)
		}
		if loc.head != "HEAD" { // HEAD itself when it is detached
			r.branch = loc.head
		}
	} else {
		r.mode, r.gitDir = "shadow", shadowDir
		r.g = git{dir: ws, gitDir: shadowDir, workTree: ws}
		made, err := r.initShadow(ctx)
		if err != nil {
			return nil, fmt.Errorf("shadow repository for %s: %w", ws, err)
		}
		r.snapshotted = made
		if loc, err = locate(ctx, r.g, false); loc.gitDir == "" {
			return nil, fmt.Errorf("shadow repository for %s: %w", ws, err)
		}
		r.branch = loc.head
		if loc.head == "" || loc.head == "HEAD" {
			// symbolic-ref, not rev-parse: a shadow repository whose first
			// commit was never made (planagent killed after its init) still
			// names its branch.
			r.branch = ""
			if ref, err := r.g.line(ctx, "symbolic-ref", "-q", "HEAD"); err == nil {
				r.branch = ref
			}
		}
	}
	r.objectFormat, r.objectsDir, r.commonDir = loc.objectFormat, loc.objects, loc.common
	r.prepareCopies()
	r.clearStaleKeepLocks()
	r.cat = &catFile{g: r.g}
	r.store = &objectStore{cat: r.cat, objectFormat: r.objectFormat}
	// The parts last, once the store is made: each gets the settings fixed
	// from here on as values, and the state parts share (the pool, the
	// keep refs, the quarantines, the user's config read on first use) by
	// pointer.
	r.copies = &copyMaker{
		states: r.states, pool: &r.pool, cache: r.cache, store: r.store, cat: r.cat,
		workTree: r.workTree, user: r.user, objectFormat: r.objectFormat,
		userAttributes: userAttributesFile(), umask: processUmask(),
	}
	r.squashes = &squasher{
		g: r.g, gitDir: r.gitDir, workTree: r.workTree, user: r.user,
		states: r.states, pool: &r.pool, store: r.store, cache: r.cache, pending: r.pending, quarantines: &r.quarantines,
	}
	r.move = &workspaceMove{
		g: r.g, cat: r.cat, store: r.store, pending: r.pending, keeps: &r.keeps,
		gitDir: r.gitDir, workTree: r.workTree, branch: r.branch, objectsDir: r.objectsDir,
	}
	return r, nil
}

// location is where a repository's parts are, as git reports them, and
// what HEAD is: its branch's full name, "HEAD" when it is detached, ""
// when it names no commit (a repository with none yet).
type location struct {
	top, gitDir, objectFormat, objects, common, head string
}

// locate asks git, in one rev-parse, where the repository of g is (top:
// its work tree's top too, which fails outside a work tree) and what HEAD
// is. rev-parse prints one line per option, in order, and HEAD's name
// last: with no commit it fails there, having printed the rest, so a
// location with a git directory and no head is a repository without a
// commit, and one without a git directory is no repository (err says why).
// A relative path is relative to g's directory.
func locate(ctx context.Context, g git, top bool) (location, error) {
	args := []string{"rev-parse", "--absolute-git-dir", "--show-object-format", "--git-path", "objects", "--git-common-dir",
		"--verify", "-q", "--symbolic-full-name", "HEAD"}
	if top {
		args = append(args[:1], append([]string{"--show-toplevel"}, args[1:]...)...)
	}
	out, err := g.run(ctx, args...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !top {
		lines = append([]string{""}, lines...)
	}
	switch {
	case err != nil && len(lines) != 5:
		return location{}, err
	case err == nil && len(lines) != 6:
		return location{}, fmt.Errorf("git %s printed %d lines, not 6 (git older than 2.25?)", strings.Join(args, " "), len(lines))
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(g.dir, p)
	}
	loc := location{top: lines[0], gitDir: lines[1], objectFormat: lines[2], objects: abs(lines[3]), common: abs(lines[4])}
	if len(lines) == 6 {
		loc.head = lines[5]
	}
	if loc.objectFormat == "" {
		loc.objectFormat = "sha1"
	}
	return loc, err
}

// Close ends the git process the repository keeps for reading objects
// (planagent's exit ends it too: its input closes).
func (r *Repo) Close() error {
	r.cat.close()
	return nil
}

// initShadow makes the shadow repository on first use, with a first
// commit of the workspace as it is, and says whether it made it.
func (r *Repo) initShadow(ctx context.Context) (bool, error) {
	if _, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(r.gitDir), 0o755); err != nil {
		return false, err
	}
	if _, err := (git{dir: r.workTree}).run(ctx, "init", "-q", "--bare", "-b", "codeagent", r.gitDir); err != nil {
		return false, err
	}
	if _, err := r.g.run(ctx, "config", "core.bare", "false"); err != nil {
		return false, err
	}
	// The shadow repository itself and the excluded paths never enter its commits.
	var ex []string
	if rel, ok := inside(r.workTree, r.gitDir); ok {
		ex = append(ex, "/"+rel)
	}
	for _, e := range r.exclude {
		ex = append(ex, "/"+e)
	}
	if err := os.MkdirAll(filepath.Join(r.gitDir, "info"), 0o755); err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(r.gitDir, "info", "exclude"), []byte(strings.Join(ex, "\n")+"\n"), 0o644); err != nil {
		return false, err
	}
	if _, err := r.g.run(ctx, "add", "-A"); err != nil {
		return false, err
	}
	_, err := r.g.run(ctx, "commit", "-q", "--no-verify", "--allow-empty", "-m", "workspace before the first run")
	return err == nil, err
}

// Snapshot makes the shadow repository's HEAD hold the workspace as it is
// now (a commit of whatever the user changed since the last run), so a new
// run starts from exactly the user's files. In mode "git" it does nothing:
// the user's own commits are the start. Nor right after Open made the
// shadow repository: its first commit is the workspace of this command.
func (r *Repo) Snapshot(ctx context.Context) error {
	if r.mode != "shadow" {
		return nil
	}
	if r.snapshotted {
		r.snapshotted = false // once: a later Snapshot looks at the workspace again
		return nil
	}
	if _, err := r.g.run(ctx, "add", "-A"); err != nil {
		return err
	}
	if _, err := r.g.run(ctx, "diff", "--cached", "--quiet"); err == nil {
		return nil
	}
	_, err := r.g.run(ctx, "commit", "-q", "--no-verify", "-m", "workspace before the run")
	return err
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) bool { return isAncestor(ctx, r.g, a, b) }

func isAncestor(ctx context.Context, g git, a, b string) bool {
	_, err := g.run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Head is the commit HEAD is at.
func (r *Repo) Head(ctx context.Context) (string, error) { return headOf(ctx, r.cat) }

// headOf is the commit HEAD is at, read through cat.
func headOf(ctx context.Context, cat *catFile) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	o, err := cat.get("HEAD^{commit}")
	if err != nil {
		return "", err
	}
	if o.missing {
		return "", fmt.Errorf("HEAD is not a commit")
	}
	return o.id, nil
}

// Dirty lists the workspace's files that differ from HEAD: modified,
// deleted, staged and untracked ones (ignored files do not count).
func (r *Repo) Dirty(ctx context.Context) ([]string, error) {
	out, err := r.g.run(ctx, append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."}, r.pathspecExcludes()...)...)
	if err != nil {
		return nil, err
	}
	var files []string
	entries := splitZ(out)
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		files = append(files, e[3:])
		if e[0] == 'R' || e[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	sort.Strings(files)
	return files, nil
}

func (r *Repo) pathspecExcludes() []string {
	var out []string
	for _, e := range r.exclude {
		out = append(out, ":(exclude)"+e)
	}
	return out
}

// Submodules lists the submodules (gitlinks) of commit's tree. An attempt's
// copy holds them as empty directories: a task cannot change them.
func (r *Repo) Submodules(ctx context.Context, commit string) ([]string, error) {
	return r.store.submodules(ctx, r.g, commit)
}

// submodules lists commit's submodules by git's ls-tree. A commit (an id:
// what a name resolves to may move) found without any is remembered so:
// the first squash onto the run's start, listed when the run starts, and
// the squashes onto one base at once list it once.
func (ob *objectStore) submodules(ctx context.Context, g git, commit string) ([]string, error) {
	ob.listMu.Lock()
	defer ob.listMu.Unlock()
	if ob.isPlain(commit) {
		return nil, nil
	}
	subs, err := lsSubmodules(ctx, g, commit)
	if err == nil && len(subs) == 0 && ob.isID(commit) {
		ob.markPlain(commit)
	}
	return subs, err
}

func lsSubmodules(ctx context.Context, g git, commit string) ([]string, error) {
	out, err := g.run(ctx, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, err
	}
	var subs []string
	for _, line := range splitZ(out) {
		if meta, path, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			subs = append(subs, path)
		}
	}
	return subs, nil
}

// ConflictError is a merge that cannot be made without a person: Files
// changed both in the attempt and in what was merged since its copy.
type ConflictError struct{ Files []string }

func (e *ConflictError) Error() string { return "merge conflict in " + strings.Join(e.Files, ", ") }

// Apply re-applies commit (one commit on top of base, from Squash) onto
// onto as one commit with the same message. No working tree is touched: the result exists only as a
// commit until Advance. A merge driver a .gitattributes of the task names
// is not run (copyArgs). Its objects go through a quarantine as Squash's
// do, and into the object cache when it holds both commits; they wait
// with the pending objects until a move to the merge (Advance).
func (r *Repo) Apply(ctx context.Context, dir, base, commit, onto string) (string, error) {
	if onto == base {
		return commit, nil // nothing merged since the copy: the commit itself
	}
	msg, ok := r.store.message(commit)
	if !ok {
		var err error
		if msg, err = r.g.run(ctx, "log", "-1", "--format=%B", commit); err != nil {
			return "", err
		}
	}
	quarantine, err := r.quarantines.take()
	if err != nil {
		return "", err
	}
	var files []string
	defer func() { r.quarantines.put(quarantine, files) }()
	cached := r.cache.hold(onto, commit)
	merged, files, err := r.applyInto(ctx, quarantine, cached, commit, onto, strings.TrimSpace(msg))
	if cached {
		r.cache.release()
	}
	if err != nil {
		return "", err
	}
	if err := migrate(quarantine, files, r.pending.target()); err != nil {
		return "", fmt.Errorf("keep the merge's objects: %w", err)
	}
	if r.store.isPlain(onto) && r.store.isPlain(commit) {
		r.store.markPlain(merged) // a merge of two trees without gitlinks has none
	}
	return merged, nil
}

// applyInto merges for Apply with the objects in quarantine and, with
// cached (the caller holds the cache), puts them into the object cache.
func (r *Repo) applyInto(ctx context.Context, quarantine string, cached bool, commit, onto, msg string) (string, []string, error) {
	tree, err := r.mergeTree(ctx, quarantine, cached, commit, onto)
	if err != nil {
		return "", nil, err
	}
	merged, err := r.store.writeCommit(quarantine, tree, []string{onto}, msg, time.Now())
	if err != nil {
		return "", nil, err
	}
	r.store.rememberTree(merged, tree)
	files, err := listFiles(quarantine)
	if err != nil {
		return "", nil, err
	}
	if cached {
		if err := r.cache.addLoose(quarantine, files, merged); err != nil {
			return "", nil, fmt.Errorf("put the merge's objects into the object cache: %w", err)
		}
	}
	return merged, files, nil
}

// mergeTree merges commit onto onto with git, its objects into quarantine.
func (r *Repo) mergeTree(ctx context.Context, quarantine string, cached bool, commit, onto string) (string, error) {
	alt := r.pending.alternates()
	if cached {
		alt = alternates(r.cache.objects())
	}
	env := []string{"GIT_OBJECT_DIRECTORY=" + quarantine, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + alt}
	u, err := r.user.get(ctx)
	if err != nil {
		return "", err
	}
	g := r.g
	g.extra = u.copyArgs
	out, err := g.runEnv(ctx, env, nil, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", onto, commit)
	fields := splitZ(out)
	if err != nil {
		if exitCode(err) == 1 && len(fields) > 0 {
			return "", &ConflictError{Files: uniq(fields[1:])}
		}
		return "", fmt.Errorf("merge onto %s: %w", short(onto), err)
	}
	if len(fields) == 0 {
		return "", fmt.Errorf("merge onto %s: git merge-tree printed no tree", short(onto))
	}
	return fields[0], nil
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Diff is the patch from one commit to another.
func (r *Repo) Diff(ctx context.Context, from, to string) (string, error) {
	return r.g.run(ctx, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary", from, to)
}

// ErrMoved means the branch is not where the run left it.
var ErrMoved = errors.New("the branch moved")

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func inside(root, p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
