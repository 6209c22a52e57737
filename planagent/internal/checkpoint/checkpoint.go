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
// Nothing here runs `git clean`, `reset --hard` or a checkout over the
// user's files: the workspace only changes in Move, which writes exactly
// the files that differ between two commits and refuses, naming them, when
// one of those files was changed by someone else meanwhile.
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// Repo is the checkpoint repository of one workspace.
type Repo struct {
	g        git // commands on the integration repository and the workspace
	mode     string
	gitDir   string
	workTree string
	branch   string   // refs/heads/…, or "" for a detached HEAD
	exclude  []string // workspace-relative paths never committed nor counted

	poolMu  sync.Mutex
	pool    string // thrown-away copies kept for reuse ("" = none)
	poolMax int
	poolSeq int
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
	top, err := git{dir: ws}.line(ctx, "rev-parse", "--show-toplevel")
	if err == nil && samePath(top, ws) {
		gd, err := git{dir: ws}.line(ctx, "rev-parse", "--absolute-git-dir")
		if err != nil {
			return nil, fmt.Errorf("checkpoints in %s: %w", ws, err)
		}
		r.mode, r.gitDir, r.g = "git", gd, git{dir: ws}
		if _, err := r.g.line(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
			return nil, fmt.Errorf("checkpoints in %s: the repository has no commit yet: commit something first (git commit --allow-empty -m init)", ws)
		}
	} else {
		r.mode, r.gitDir = "shadow", shadowDir
		r.g = git{dir: ws, gitDir: shadowDir, workTree: ws}
		if err := r.initShadow(ctx); err != nil {
			return nil, fmt.Errorf("shadow repository for %s: %w", ws, err)
		}
	}
	if ref, err := r.g.line(ctx, "symbolic-ref", "-q", "HEAD"); err == nil {
		r.branch = ref
	}
	return r, nil
}

// initShadow makes the shadow repository on first use, with a first
// commit of the workspace as it is.
func (r *Repo) initShadow(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.gitDir), 0o755); err != nil {
		return err
	}
	if _, err := (git{dir: r.workTree}).run(ctx, "init", "-q", "--bare", "-b", "codeagent", r.gitDir); err != nil {
		return err
	}
	if _, err := r.g.run(ctx, "config", "core.bare", "false"); err != nil {
		return err
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
		return err
	}
	if err := os.WriteFile(filepath.Join(r.gitDir, "info", "exclude"), []byte(strings.Join(ex, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if _, err := r.g.run(ctx, "add", "-A"); err != nil {
		return err
	}
	_, err := r.g.run(ctx, "commit", "-q", "--no-verify", "--allow-empty", "-m", "workspace before the first run")
	return err
}

// Snapshot makes the shadow repository's HEAD hold the workspace as it is
// now (a commit of whatever the user changed since the last run), so a new
// run starts from exactly the user's files. In mode "git" it does nothing:
// the user's own commits are the start.
func (r *Repo) Snapshot(ctx context.Context) error {
	if r.mode != "shadow" {
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
func (r *Repo) IsAncestor(ctx context.Context, a, b string) bool {
	_, err := r.g.run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Head is the commit HEAD is at.
func (r *Repo) Head(ctx context.Context) (string, error) {
	return r.g.line(ctx, "rev-parse", "--verify", "HEAD^{commit}")
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
	out, err := r.g.run(ctx, "ls-tree", "-r", "-z", "--full-tree", commit)
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

// NewCopy makes a self-contained copy of the tree at commit in dir: a git
// clone of its own (through git's pack protocol: no object file is shared
// with the repository, and a gc running there meanwhile is no hazard; nothing
// done in the copy can reach the user's objects) with commit checked out,
// usable where only dir is mounted (a container), git included. A copy
// thrown away earlier is reused when there is one: only the files that
// differ are written and everything else it held is removed, which is what
// keeps a copy cheap on a large tree.
func (r *Repo) NewCopy(ctx context.Context, dir, commit string) error {
	if err := r.keep(ctx, commit); err != nil {
		return err
	}
	if r.takeFromPool(dir) {
		return r.checkoutCopy(ctx, dir, commit)
	}
	return r.freshCopy(ctx, dir, commit)
}

// keepRef is the ref that keeps commit reachable and fetchable by name
// from the copies (DropKeeps removes them when the run ends).
func keepRef(commit string) string { return "refs/codeagent/keep/" + commit }

func (r *Repo) keep(ctx context.Context, commit string) error {
	_, err := r.g.run(ctx, "update-ref", keepRef(commit), commit)
	return err
}

// freshCopy clones the repository into dir and checks commit out.
func (r *Repo) freshCopy(ctx context.Context, dir, commit string) error {
	if err := r.clone(ctx, dir); err != nil {
		return err
	}
	return r.checkoutCopy(ctx, dir, commit)
}

// clone clones the repository into dir without a checkout.
func (r *Repo) clone(ctx context.Context, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	_, err := (git{dir: filepath.Dir(dir)}).run(ctx, "clone", "-q", "--no-local", "--no-checkout", r.gitDir, dir)
	return err
}

// checkoutCopy makes the copy in dir (a clone of the repository, fresh or
// taken from the pool) hold exactly commit.
func (r *Repo) checkoutCopy(ctx context.Context, dir, commit string) error {
	ref := keepRef(commit)
	// What an earlier attempt may have put in the copy's own git directory
	// (config, hooks) is not trusted: both are made anew.
	if err := os.RemoveAll(filepath.Join(dir, ".git", "hooks")); err != nil {
		return err
	}
	conf := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n[remote \"origin\"]\n\turl = " +
		r.gitDir + "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(conf), 0o644); err != nil {
		return err
	}
	c := git{dir: dir}
	if _, err := c.run(ctx, "fetch", "-q", "--no-tags", "origin", "+"+ref+":refs/codeagent/base"); err != nil {
		return err
	}
	if _, err := c.run(ctx, "checkout", "-q", "-f", "--detach", commit); err != nil {
		return err
	}
	_, err := c.run(ctx, "clean", "-q", "-ffdx")
	return err
}

// SetPool keeps up to max thrown-away copies in dir for NewCopy to reuse.
func (r *Repo) SetPool(dir string, max int) {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	r.pool, r.poolMax = dir, max
}

// Prewarm fills the pool with copies of commit, one after another, until
// the pool is full or ctx is done; a copy cut short is removed. It is meant
// to run while nothing else uses the repository's copies (the planner
// thinking, the plan awaiting confirmation): on a large tree a full
// checkout costs seconds (10 000 files: 4-7 s on a virtual disk), and
// without it each of a run's first attempts (one per parallel task, one
// for acceptance) would pay for one.
func (r *Repo) Prewarm(ctx context.Context, commit string) (int, error) {
	r.poolMu.Lock()
	pool, max := r.pool, r.poolMax
	r.poolMu.Unlock()
	if pool == "" {
		return 0, nil
	}
	staging := pool + ".staging"
	defer os.RemoveAll(staging)
	made := 0
	for i := 0; ctx.Err() == nil; i++ {
		if entries, _ := os.ReadDir(pool); len(entries) >= max {
			break
		}
		dir := filepath.Join(staging, fmt.Sprintf("%d-%d", os.Getpid(), i))
		// The files are what costs; NewCopy sets the rest up (config,
		// hooks, the keep ref) when it takes the copy.
		err := r.clone(ctx, dir)
		if err == nil {
			_, err = (git{dir: dir}).run(ctx, "checkout", "-q", "-f", "--detach", commit)
		}
		if err != nil {
			_ = removeAll(dir)
			if ctx.Err() != nil {
				break
			}
			return made, fmt.Errorf("prepare a copy of the workspace: %w", err)
		}
		if !r.putInPool(dir) {
			_ = removeAll(dir)
			break
		}
		made++
	}
	return made, nil
}

// DrainPool deletes the thrown-away copies kept for reuse: once a run ends,
// nothing a failed attempt made stays on the disk.
func (r *Repo) DrainPool() error {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.pool == "" {
		return nil
	}
	// First a copy Prewarm was making when planagent was killed.
	errs := []error{removeAll(r.pool + ".staging")}
	entries, err := os.ReadDir(r.pool)
	if err != nil {
		if os.IsNotExist(err) {
			return errors.Join(errs...)
		}
		return err
	}
	for _, e := range entries {
		errs = append(errs, removeAll(filepath.Join(r.pool, e.Name())))
	}
	return errors.Join(errs...)
}

func (r *Repo) takeFromPool(dir string) bool {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.pool == "" {
		return false
	}
	entries, _ := os.ReadDir(r.pool)
	for _, e := range entries {
		if os.Rename(filepath.Join(r.pool, e.Name()), dir) == nil {
			return true
		}
	}
	return false
}

// RemoveCopy throws a copy away: into the pool when there is room (NewCopy
// wipes it before it is used again), else off the disk.
func (r *Repo) RemoveCopy(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	if r.putInPool(dir) {
		return nil
	}
	return removeAll(dir)
}

// DiscardCopy deletes a copy without keeping it for reuse: for the copy of
// an attempt whose agent may still be writing (it timed out, and its runtime
// could not stop it). A process that still has its working directory there
// can no longer create files in the deleted tree, while a copy recycled for
// another attempt would take whatever it writes next.
func (r *Repo) DiscardCopy(dir string) error {
	return removeAll(dir)
}

func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		// A tool may have left a read-only directory behind.
		_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		return os.RemoveAll(dir)
	}
	return nil
}

func (r *Repo) putInPool(dir string) bool {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.pool == "" {
		return false
	}
	if fi, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false // not a finished copy
	}
	if err := os.MkdirAll(r.pool, 0o755); err != nil {
		return false
	}
	if entries, _ := os.ReadDir(r.pool); len(entries) >= r.poolMax {
		return false
	}
	r.poolSeq++
	return os.Rename(dir, filepath.Join(r.pool, fmt.Sprintf("%d-%d", os.Getpid(), r.poolSeq))) == nil
}

// Squash takes everything in the copy at dir that is not ignored (files
// made by shell commands included; commits the agent made in the copy do
// not matter, only its files) as one commit on top of base in the
// repository, and returns it; base itself when the tree is unchanged. The
// copy's files are read through the repository's own git directory and a
// scratch index, so no setting the copy's .git holds is ever obeyed.
func (r *Repo) Squash(ctx context.Context, dir, base, subject, body string) (string, error) {
	idx, err := os.CreateTemp("", "codeagent-index-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(idx.Name())
	// The copy's index, when it can be read, saves hashing every file again
	// (its stat data says which are unchanged); it is only data, and a
	// scratch index made from base is the fallback.
	_, cerr := copyFile(idx, filepath.Join(dir, ".git", "index"))
	idx.Close()
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	g := git{dir: dir, gitDir: r.gitDir, workTree: dir}
	var tree string
	if cerr == nil {
		// An entry the agent staged or committed in the copy names a blob
		// only the copy's objects hold; write-tree then fails, and the
		// scratch index from base is used instead.
		if _, err = g.runEnv(ctx, env, nil, "add", "-A"); err == nil {
			tree, err = g.runEnv(ctx, env, nil, "write-tree")
		}
	}
	if cerr != nil || err != nil {
		if _, err := g.runEnv(ctx, env, nil, "read-tree", base); err != nil {
			return "", err
		}
		if _, err := g.runEnv(ctx, env, nil, "add", "-A"); err != nil {
			return "", err
		}
		if tree, err = g.runEnv(ctx, env, nil, "write-tree"); err != nil {
			return "", err
		}
	}
	tree = strings.TrimSpace(tree)
	baseTree, err := r.g.line(ctx, "rev-parse", base+"^{tree}")
	if err != nil {
		return "", err
	}
	if tree == baseTree {
		return base, nil
	}
	msg := subject
	if strings.TrimSpace(body) != "" {
		msg += "\n\n" + strings.TrimSpace(body)
	}
	c, err := r.g.runIn(ctx, []byte(msg), "commit-tree", tree, "-p", base, "-F", "-")
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(c)
	if err := r.keep(ctx, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// ConflictError is a merge that cannot be made without a person: Files
// changed both in the attempt and in what was merged since its copy.
type ConflictError struct{ Files []string }

func (e *ConflictError) Error() string { return "merge conflict in " + strings.Join(e.Files, ", ") }

// Apply re-applies commit (one commit on top of base, from Squash) onto
// onto as one commit with the same message. No working tree is touched: the result exists only as a
// commit until Move.
func (r *Repo) Apply(ctx context.Context, dir, base, commit, onto string) (string, error) {
	if onto == base {
		return commit, nil // nothing merged since the copy: the commit itself
	}
	out, err := r.g.run(ctx, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", onto, commit)
	fields := splitZ(out)
	if err != nil {
		if exitCode(err) == 1 && len(fields) > 0 {
			files := uniq(fields[1:])
			return "", &ConflictError{Files: files}
		}
		return "", fmt.Errorf("merge onto %s: %w", short(onto), err)
	}
	if len(fields) == 0 {
		return "", fmt.Errorf("merge onto %s: git merge-tree printed no tree", short(onto))
	}
	msg, err := r.g.run(ctx, "log", "-1", "--format=%B", commit)
	if err != nil {
		return "", err
	}
	return r.g.line(ctx, "commit-tree", fields[0], "-p", onto, "-m", strings.TrimSpace(msg))
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
	return r.g.run(ctx, "diff", "--no-color", "--no-ext-diff", "--binary", from, to)
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

// copyFile copies the regular file src; anything else (a FIFO an agent
// left in the copy would block an open) is refused unopened.
func copyFile(dst *os.File, src string) (int64, error) {
	if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", src)
	}
	f, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", src)
	}
	return io.Copy(dst, f)
}

// DropKeeps deletes the refs that kept the run's commits reachable for its
// copies (refs/codeagent/keep/): once a run ends, its checkpoints are on
// the branch, and what was never merged may be garbage-collected.
func (r *Repo) DropKeeps(ctx context.Context) error {
	out, err := r.g.run(ctx, "for-each-ref", "--format=delete %(refname)", "refs/codeagent/keep/")
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	_, err = r.g.runIn(ctx, []byte(out), "update-ref", "--stdin")
	return err
}
