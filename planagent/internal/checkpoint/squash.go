package checkpoint

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// squasher makes a task's commit of a copy (Squash): it reads the copy's
// files through the repository's git directory with the hardened settings
// and the copy's saved index, refuses what cannot be committed (a
// submodule written into, a gitlink or .gitmodules git's fsck rejects, a
// file or file count past the limits), and keeps the commit's objects in a
// quarantine, then with the pending ones (and in the object cache).
type squasher struct {
	g           git // the repository's, for what its commits hold
	gitDir      string
	workTree    string
	user        *userSettings
	states      copyStates
	pool        *copyPool
	store       *objectStore
	cache       *objectCache
	pending     pendingObjects
	quarantines *quarantines
	// limits bound a copy's files (Repo.SetLimits, before the first
	// squash; read-only after).
	limits Limits
}

// SubmoduleError is a task that wrote inside a submodule: a submodule is an
// empty directory in the task's copy, and what was written there cannot be
// kept.
type SubmoduleError struct{ Paths []string }

func (e *SubmoduleError) Error() string {
	return "the task wrote inside the submodule " + strings.Join(e.Paths, ", ") +
		": submodules are not part of a task's copy and changes there cannot be kept (change the submodule's own repository instead)"
}

// GitlinkError is a squash whose tree would record a submodule commit
// (a gitlink) the base did not have: a nested repository the purge did
// not see. It is refused, never committed.
type GitlinkError struct{ Paths []string }

func (e *GitlinkError) Error() string {
	return "the task's tree would add the gitlink " + strings.Join(e.Paths, ", ") +
		" (a nested repository's commit, not its files): refused; a task cannot add a submodule"
}

// newGitlinks returns a GitlinkError when tree has a gitlink (mode 160000)
// that base's tree lacks or that changed from another mode; diff-tree
// reads only the subtrees that differ.
func newGitlinks(ctx context.Context, g git, env []string, baseTree, tree string) error {
	out, err := g.runEnv(ctx, env, nil, "diff-tree", "-r", "-z", "--no-renames", baseTree, tree)
	if err != nil {
		return err
	}
	var paths []string
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) >= 2 && meta[1] == "160000" && meta[0] != "160000" {
			paths = append(paths, fields[i+1])
		}
	}
	if len(paths) > 0 {
		return &GitlinkError{Paths: paths}
	}
	return nil
}

// Squash takes everything in the copy at dir that is not ignored (files
// made by shell commands included; commits the agent made in the copy do
// not matter, only its files) as one commit on top of base in the
// repository, and returns it; base itself when the tree is unchanged.
// Nested repositories' .git and special files are removed first and named
// in removed. The files are read through the repository's git directory,
// hardened, and a scratch index made from the index the host saved when
// it made the copy: nothing of the copy's own .git is ever read.
func (r *Repo) Squash(ctx context.Context, dir, base, subject, body string) (commit string, removed []string, err error) {
	return r.squashes.squash(ctx, dir, base, subject, body)
}

// squash is Squash.
func (sq *squasher) squash(ctx context.Context, dir, base, subject, body string) (commit string, removed []string, err error) {
	found, err := purge(dir, purgeOptions{
		tracked: trackedAt(filepath.Join(sq.states.of(dir), "index"), sq.store.idSize()),
		maxFile: sq.limitsOrDefault().MaxFileSize,
	})
	removed = found.removed
	if err != nil {
		return "", removed, fmt.Errorf("read the copy %s: %w", dir, err)
	}
	if err := sq.checkSubmodules(ctx, dir, base); err != nil {
		return "", removed, err
	}
	// Before git reads a file: a file's size is judged by what it
	// claims, not by reading it.
	if err := sq.checkLimits(ctx, dir, found); err != nil {
		return "", removed, err
	}
	msg := subject
	if strings.TrimSpace(body) != "" {
		msg += "\n\n" + strings.TrimSpace(body)
	}
	// Objects go to a quarantine first (as git's receive-pack does), then
	// wait with the pending objects, and enter the repository only with
	// the move to the commit: a refused or failed attempt leaves nothing
	// in the user's objects.
	quarantine, err := sq.quarantines.take()
	if err != nil {
		return "", removed, err
	}
	var files []string // what git wrote there, once the commit is made
	defer func() { sq.quarantines.put(quarantine, files) }()
	// With base in the object cache, the quarantine's alternate is the
	// cache rather than the repository: what git writes into it is then
	// exactly what the commit has and the cache lacks, and goes into the
	// cache as one pack, so the acceptance copy and the next task's copy
	// need no pack-objects. The cache is held meanwhile (a repack would
	// remove the packs git reads).
	cached := sq.cache.hold(base)
	commit, files, err = sq.squashInto(ctx, quarantine, cached, dir, base, msg)
	if cached {
		sq.cache.release()
	}
	if err != nil {
		return "", removed, err
	}
	if commit == base {
		sq.pool.squashedTo(dir, base, base, filepath.Join(quarantine, "index"))
		return commit, removed, nil
	}
	sq.store.remember(commit, msg)
	if sq.store.isPlain(base) {
		// A copy's squash adds no gitlink (nested repositories are taken
		// as plain files): base without submodules, its commit too.
		sq.store.markPlain(commit)
	}
	// Kept with the pending objects, out of the repository until a move
	// to the commit (or to its merge) brings them in (Advance): no keep
	// ref either.
	if err := migrate(quarantine, files, sq.pending.target()); err != nil {
		return "", removed, fmt.Errorf("keep the task's objects: %w", err)
	}
	sq.pool.squashedTo(dir, base, commit, filepath.Join(quarantine, "index"))
	return commit, removed, nil
}

// squashInto makes Squash's commit with its objects in quarantine, and
// with cached (the caller holds the cache) puts them into the object
// cache too.
func (sq *squasher) squashInto(ctx context.Context, quarantine string, cached bool, dir, base, msg string) (string, []string, error) {
	alt := sq.pending.alternates()
	if cached {
		alt = alternates(sq.cache.objects())
	}
	idx := filepath.Join(quarantine, "index")
	env := []string{"GIT_INDEX_FILE=" + idx, "GIT_OBJECT_DIRECTORY=" + quarantine, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + alt}
	u, err := sq.user.get(ctx)
	if err != nil {
		return "", nil, err
	}
	g := git{dir: dir, gitDir: sq.gitDir, workTree: dir, hardened: true, extra: u.copyArgs}
	var tree string
	var news []string // with known, what the quarantine can hold (see below)
	known := false
	err = copyRegular(idx, filepath.Join(sq.states.of(dir), "index"))
	if err == nil {
		if _, err = g.runEnv(ctx, env, nil, "add", "-A"); err == nil {
			tree, news, known, err = sq.writeIndexTree(ctx, g, env, quarantine, idx, dir, base)
		}
	}
	if err != nil {
		// No saved index (or an unusable one): a scratch one from base,
		// which hashes every file.
		known = false
		_ = os.Remove(idx)
		if _, err := g.runEnv(ctx, env, nil, "read-tree", base); err != nil {
			return "", nil, err
		}
		if _, err := g.runEnv(ctx, env, nil, "add", "-A"); err != nil {
			return "", nil, err
		}
		if tree, err = g.runEnv(ctx, env, nil, "write-tree"); err != nil {
			return "", nil, err
		}
	}
	tree = strings.TrimSpace(tree)
	baseTree, err := sq.store.commitTree(base)
	if err != nil {
		return "", nil, fmt.Errorf("the copy's base: %w", err)
	}
	if tree == baseTree {
		return base, nil, nil
	}
	// indexTree (known) made the tree only when no gitlink changed; git's
	// tree is checked here.
	if !known {
		if err := newGitlinks(ctx, g, env, baseTree, tree); err != nil {
			return "", nil, err
		}
	}
	// A copy without a .gitmodules has none in its tree: no lookup.
	if _, err := os.Lstat(filepath.Join(dir, ".gitmodules")); err == nil {
		q := git{dir: sq.workTree, gitDir: sq.gitDir, hardened: true}
		ids, err := lookup(ctx, q, env, tree+":.gitmodules", base+":.gitmodules")
		if err != nil {
			return "", nil, err
		}
		if err := checkGitmodules(ctx, q, env, ids[0], ids[1]); err != nil {
			return "", nil, err
		}
	}
	commit, err := sq.store.writeCommit(quarantine, tree, []string{base}, msg, time.Now())
	if err != nil {
		return "", nil, err
	}
	sq.store.rememberTree(commit, tree)
	files, err := quarantined(quarantine, known, append(news, commit))
	if err != nil {
		return "", nil, err
	}
	if cached {
		if err := sq.cache.addLoose(quarantine, files, commit); err != nil {
			return "", nil, fmt.Errorf("put the task's objects into the object cache: %w", err)
		}
	}
	return commit, files, nil
}

// writeIndexTree writes the tree of the index idx that git add made from
// the saved index of the copy at dir, here (indexTree) when this process
// made the copy at base (the saved index is then base's tree), else by git.
func (sq *squasher) writeIndexTree(ctx context.Context, g git, env []string, quarantine, idx, dir, base string) (tree string, news []string, known bool, err error) {
	made := sq.pool.madeAtOf(dir)
	if made == base {
		if baseTree, err := sq.store.commitTree(base); err == nil {
			if tree, news, err := sq.indexTree(quarantine, idx, filepath.Join(sq.states.of(dir), "index"), baseTree); err == nil {
				return tree, news, true, nil
			}
		}
	}
	tree, err = g.runEnv(ctx, env, nil, "write-tree")
	return tree, nil, false, err
}

// indexTree writes the tree of the index idx, which git add made from the
// copy's saved index (saved, the base's, whose tree is baseTree), into the
// objects directory dir, and returns its id: what `git write-tree` would
// write, without the process. Only the paths whose entries differ are
// looked at, and only the trees above them written. news are the objects
// the new tree has that base's has not: the blobs of the entries that
// differ and the trees written. errGitCheckout when either index is one
// this does not read.
func (sq *squasher) indexTree(dir, idx, saved, baseTree string) (tree string, news []string, err error) {
	idLen := sq.store.idSize()
	now, _, err := readIndex(idx, idLen)
	if err != nil {
		return "", nil, err
	}
	was, _, err := readIndex(saved, idLen)
	if err != nil {
		return "", nil, err
	}
	set := map[string]entry{}
	i, j := 0, 0
	for i < len(was) || j < len(now) {
		switch {
		case j == len(now) || (i < len(was) && was[i].Path < now[j].Path):
			set[was[i].Path] = entry{}
			i++
		case i == len(was) || now[j].Path < was[i].Path:
			set[now[j].Path] = entry{mode: treeMode(now[j].Stat[6]), blob: hex.EncodeToString(now[j].OID)}
			j++
		default:
			if now[j].Stat[6] != was[i].Stat[6] || !bytes.Equal(now[j].OID, was[i].OID) {
				set[now[j].Path] = entry{mode: treeMode(now[j].Stat[6]), blob: hex.EncodeToString(now[j].OID)}
			}
			i++
			j++
		}
	}
	if len(set) == 0 {
		return baseTree, nil, nil
	}
	for p, e := range set {
		// A changed gitlink goes to git's write-tree, whose tree the squash
		// checks for gitlinks the base lacks (newGitlinks).
		if !plainPath(p) || (e.blob != "" && e.mode != "100644" && e.mode != "100755" && e.mode != "120000") {
			return "", nil, errGitCheckout
		}
		if e.blob != "" && e.mode != "160000" {
			news = append(news, e.blob)
		}
	}
	tree, err = sq.store.editTree(dir, baseTree, set, &news)
	return tree, news, err
}

// quarantined lists the object files in quarantine, as listFiles does.
// With known, ids holds every object git add and this process can have
// written there for the commit (its new blobs, trees and the commit):
// only those are looked for, not every fan-out directory a quarantine
// keeps read. Git add writes a pack only for a file past
// core.bigFileThreshold; with a pack directory the whole is listed.
func quarantined(quarantine string, known bool, ids []string) ([]string, error) {
	if _, err := os.Lstat(filepath.Join(quarantine, "pack")); !known || err == nil {
		return listFiles(quarantine)
	}
	files := make([]string, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		rel := filepath.Join(id[:2], id[2:])
		if seen[rel] {
			continue
		}
		seen[rel] = true
		if _, err := os.Lstat(filepath.Join(quarantine, rel)); err == nil {
			files = append(files, rel)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return files, nil
}

// migrate moves files (listFiles) of the quarantine into the repository's
// objects, a pack's index after its pack, as git does.
func migrate(quarantine string, files []string, objects string) error {
	var idxs []string
	for _, rel := range files {
		if strings.HasSuffix(rel, ".idx") {
			idxs = append(idxs, rel)
			continue
		}
		if err := moveObject(filepath.Join(quarantine, rel), filepath.Join(objects, rel)); err != nil {
			return err
		}
	}
	for _, rel := range idxs {
		if err := moveObject(filepath.Join(quarantine, rel), filepath.Join(objects, rel)); err != nil {
			return err
		}
	}
	return nil
}

func moveObject(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return nil // objects are named by their content
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.Rename(from, to)
}

// checkSubmodules refuses a copy with anything inside a submodule's path.
func (sq *squasher) checkSubmodules(ctx context.Context, dir, base string) error {
	subs, err := sq.store.submodules(ctx, sq.g, base)
	if err != nil {
		return err
	}
	var written []string
	for _, s := range subs {
		p := filepath.Join(dir, filepath.FromSlash(s))
		fi, err := os.Lstat(p)
		if err != nil {
			continue // removed: the gitlink stays as it was
		}
		if !fi.IsDir() {
			written = append(written, s)
			continue
		}
		// Its permissions given back first (the purge's walk has, unless
		// it is gone): an unreadable one would hide what git still reads.
		entries, err := readDirFixed(p, s)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if len(entries) > 0 {
			written = append(written, s)
		}
	}
	if len(written) > 0 {
		sort.Strings(written)
		return &SubmoduleError{Paths: written}
	}
	return nil
}

// GitmodulesError is a .gitmodules that git's own fsck rejects (a command
// as a submodule's update, a url or path read as an option): committed, it
// would make the user's repository fail fsck and any push to a server that
// checks.
type GitmodulesError struct{ Setting string }

func (e *GitmodulesError) Error() string {
	return "the task's .gitmodules is refused: " + e.Setting + " (git fsck rejects it; a submodule's update may not be a command, its url and path not an option)"
}

// lookup resolves object names in one git process (cat-file
// --batch-check); a name that names nothing is "".
func lookup(ctx context.Context, g git, env []string, names ...string) ([]string, error) {
	out, err := g.runEnv(ctx, env, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(names) {
		return nil, fmt.Errorf("git cat-file: %d answers for %d names", len(lines), len(names))
	}
	ids := make([]string, len(names))
	for i, l := range lines {
		if !strings.Contains(l, " ") { // "<name> missing", "<name> ambiguous"
			ids[i] = l
		}
	}
	return ids, nil
}

// checkGitmodules refuses a .gitmodules the task changed (blob, was old;
// "" where there is none) when git's fsck would reject it.
func checkGitmodules(ctx context.Context, g git, env []string, blob, old string) error {
	if blob == "" || blob == old {
		return nil
	}
	out, err := g.runEnv(ctx, env, nil, "config", "--blob="+blob, "-z", "--list")
	if err != nil {
		return &GitmodulesError{Setting: "it cannot be read as git config"}
	}
	for _, kv := range splitZ(out) {
		key, value, _ := strings.Cut(kv, "\n")
		if !strings.HasPrefix(key, "submodule.") {
			continue
		}
		switch {
		case strings.HasSuffix(key, ".update") && strings.HasPrefix(value, "!"),
			(strings.HasSuffix(key, ".url") || strings.HasSuffix(key, ".path")) && strings.HasPrefix(value, "-"),
			strings.Contains(key, ".."):
			return &GitmodulesError{Setting: key + "=" + value}
		}
	}
	return nil
}
