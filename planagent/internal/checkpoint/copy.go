package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An attempt's copy is mounted into the agent's container, so everything in
// it — its .git included — may have been written by the agent. The host's
// git therefore never uses a copy's own git directory: a copy made anew or
// taken from the pool gets a new .git (made here, from the repository, with
// no remote naming a host path), every nested .git and special file in it is
// removed first, and the index that says which files are unchanged is the
// one saved here when the copy was made, in a directory no container mounts
// (copyState). Squash reads the copy's files through the repository's git
// directory with hardened settings. So a hook, a config include, a
// commondir, a filter, a symlinked or FIFO .git the agent leaves behind is
// deleted, never read.

// copyMaker makes a copy hold a commit: its git directory (initCopyGitDir),
// its objects (copyObjects, from the object cache), its files, index and
// HEAD (checkoutCopy, or git's checkout), nothing else (cleanCopy) but the
// workspace's included ignored files (copyIncluded). Which copy and when is
// the pool's and Repo's: this part only makes.
type copyMaker struct {
	states   copyStates
	pool     *copyPool
	cache    *objectCache
	store    *objectStore
	cat      *catFile
	workTree string
	// user are the repository's (Repo.user): a copy's checkout smudges
	// with the user's filters, as the squash's add cleans.
	user         *userSettings
	objectFormat string
	// include are the workspace's ignored files every copy gets
	// (Repo.SetInclude, before the first copy; read-only after).
	include []string
	// initMu guards the HEAD and config of the first copy's git
	// directory, which git made; later copies get the same files.
	initMu               sync.Mutex
	copyHead, copyConfig []byte
	// What the copies' checkout done here needs: whether the user has an
	// attributes file (then git does it, as when their config converts:
	// user), and the umask new files get.
	userAttributes bool
	umask          os.FileMode
	// neutral is what neutralAttributes said of each attributes file's
	// blob seen so far.
	attrMu  sync.Mutex
	neutral map[string]bool
}

// prepareCopies finds what making and reading copies needs from the
// repository (its object format and objects directory are known): where
// the copies' state goes, and how the user's filter drivers (on in the
// commands that read or check out a copy), merge drivers (off there),
// excludes and attributes files and line endings are read when first
// needed.
func (r *Repo) prepareCopies() {
	r.private = filepath.Join(r.gitDir, "codeagent", "copies")
	r.user = &userSettings{read: r.userConfig}
	r.states = copyStates{dir: r.private}
	r.pool.states = r.states
	r.preparePending()
	r.quarantines.dir = filepath.Dir(r.private)
	r.cache = newObjectCache(filepath.Join(filepath.Dir(r.private), "objects.git"), r.gitDir, r.objectFormat, r.pending.alternates())
}

// remake makes the copy in dir (new, or thrown away by an attempt) hold
// exactly commit, with a git directory emptied and written here. A trusted
// copy, remade by RecycleCopy and untouched since, is brought from the
// commit it holds to commit by writing what differs between the two: its
// other files are not looked at (on a large tree, a stat of every file
// and a walk of every directory saved). So is a squashed one, whose
// squash has just looked at every file (nothing runs in a copy once its
// agent has reported), but what it holds beside the commit (ignored and
// untracked files) is removed.
func (c *copyMaker) remake(ctx context.Context, dir, commit string, trusted bool) error {
	was, squashed := c.pool.takeMadeAt(dir)
	if (trusted || squashed) && was != "" {
		if err := c.remakeFrom(ctx, dir, was, commit, true, squashed); err == nil {
			return nil
		}
		// Whatever stopped it, the whole copy is checked now.
	}
	return c.remakeFrom(ctx, dir, was, commit, false, false)
}

// remakeFrom is remake of the copy made at was (trusted: see remake;
// clean: its untracked files removed all the same).
func (c *copyMaker) remakeFrom(ctx context.Context, dir, was, commit string, trusted, clean bool) error {
	if !trusted {
		// A git directory the base tracks stays: checked out again below
		// rather than removed and written anew.
		if _, err := purge(dir, purgeOptions{tracked: trackedAt(filepath.Join(c.states.of(dir), "index"), c.store.idSize())}); err != nil {
			return fmt.Errorf("clear the copy %s: %w", dir, err)
		}
	}
	gd := filepath.Join(dir, ".git")
	if err := c.initCopyGitDir(ctx, dir, gd); err != nil {
		return err
	}
	// The user's smudge filters and line endings, as the squash's add
	// cleans with theirs.
	u, err := c.user.get(ctx)
	if err != nil {
		return err
	}
	cg := git{dir: dir, gitDir: gd, workTree: dir, hardened: true, extra: u.copyArgs}
	st := readStamps(filepath.Join(c.states.of(dir), "packs"))
	if err := c.copyObjects(ctx, commit, filepath.Join(gd, "objects", "pack"), &st); err != nil {
		return fmt.Errorf("copy the objects of %s: %w", short(commit), err)
	}
	// What `git update-ref` would leave after a `git pack-refs`: one file,
	// no directory to make.
	if err := writeCopyFile(filepath.Join(gd, "packed-refs"), []byte(commit+" refs/codeagent/base\n")); err != nil {
		return err
	}
	// The index saved when the copy was last made says which files are
	// still as they were (their stat data): only the others are written,
	// here (checkoutCopy) or by git. Without one, the copy's own index
	// goes: the agent may have written it.
	if err := c.checkoutCopy(ctx, dir, was, commit, trusted); err != nil {
		if trusted {
			return err
		}
		index := filepath.Join(gd, "index")
		if err := copyIntoCopy(index, filepath.Join(c.states.of(dir), "index")); errors.Is(err, fs.ErrNotExist) {
			if err := removeAll(index); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if _, err := cg.run(ctx, "checkout", "-q", "-f", "--detach", commit); err != nil {
			return err
		}
	}
	if !trusted || clean {
		if err := c.cleanCopy(ctx, dir); err != nil {
			return err
		}
	}
	if err := c.copyIncluded(dir); err != nil {
		return err
	}
	if err := c.states.save(dir); err != nil {
		return err
	}
	st.seal = time.Now().UnixNano()
	if err := writeStamps(filepath.Join(c.states.of(dir), "packs"), st); err != nil {
		return err
	}
	c.pool.made(dir, commit)
	return nil
}

// initCopyGitDir makes a copy's git directory gd hold a HEAD and config
// the host wrote, and nothing else of what was there (tidyGitDir). The
// first one of the process is made by `git init` (which probes the file
// system: file modes, links, case) where nothing was, its HEAD and config
// kept; later ones get the same files, written here without a git
// process.
func (c *copyMaker) initCopyGitDir(ctx context.Context, dir, gd string) error {
	c.initMu.Lock()
	head, config := c.copyHead, c.copyConfig
	if head == nil {
		// Held through the git init: copies made at once (a run's first
		// parallel tasks) wait milliseconds for its files rather than each
		// run a git init of its own.
		defer c.initMu.Unlock()
		// git init keeps and reads what it finds: nothing of the agent's.
		if err := removeAll(gd); err != nil {
			return err
		}
		if err := initCopy(ctx, dir, c.objectFormat); err != nil {
			return err
		}
		head, herr := os.ReadFile(filepath.Join(gd, "HEAD"))
		config, cerr := os.ReadFile(filepath.Join(gd, "config"))
		if herr == nil && cerr == nil {
			c.copyHead, c.copyConfig = head, config
		}
		return nil
	}
	c.initMu.Unlock()
	kept, err := tidyGitDir(gd)
	if err != nil {
		return fmt.Errorf("clear the copy's git directory: %w", err)
	}
	if !kept {
		for _, d := range []string{"", "objects", "objects/pack", "refs"} {
			if err := os.Mkdir(filepath.Join(gd, filepath.FromSlash(d)), 0o755); err != nil {
				return err
			}
		}
	}
	if err := writeCopyFile(filepath.Join(gd, "HEAD"), head); err != nil {
		return err
	}
	return writeCopyFile(filepath.Join(gd, "config"), config)
}

// initCopy makes dir/.git a new, empty repository with dir its work tree,
// by one `git init`. No reflog (a logs/ directory would be made and
// removed per copy): git init takes core.logAllRefUpdates from a template's
// config, and writes core.bare and what it probes beside it, so no
// `git config` of its own follows.
func initCopy(ctx context.Context, dir, objectFormat string) error {
	tmpl, err := os.MkdirTemp("", "codeagent-copy-template-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpl)
	if err := os.WriteFile(filepath.Join(tmpl, "config"), []byte("[core]\n\tlogAllRefUpdates = false\n"), 0o600); err != nil {
		return err
	}
	_, err = (git{dir: dir, hardened: true}).run(ctx, "init", "-q", "--template="+tmpl, "--object-format="+objectFormat, dir)
	return err
}

// copyObjects copies the packs of the object cache, which holds commit
// and its history, into a copy's objects/pack. The cache is a bare
// repository in the host's private directory, fed from the repository by
// one `git pack-objects` per commit it lacks (only what the commits it
// already has do not reach), so a copy costs a file copy of its packs
// rather than packing the whole history again. Copied, never linked: the
// agent owns its copy's files and could rewrite a linked one.
//
// The small packs of the squashes and merges since the cache's packs were
// last merged reach the copy as one pack (their objects, kept in memory).
// A pack the copy still has as the host wrote it (stamps, updated here) is
// not written again, and one it no longer needs is renamed to a name it
// needs and rewritten in place rather than removed while another is made:
// on a virtual disk a new file costs ten times a rewrite.
func (c *copyMaker) copyObjects(ctx context.Context, commit, pack string, st *stamps) error {
	if err := c.cache.fill(ctx, commit, maxCachePacksOnPath); err != nil {
		return err
	}
	c.cache.read()
	defer c.cache.release()
	src := filepath.Join(c.cache.objects(), "pack")
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	// need maps each file the copy must hold to its cache file, or ("")
	// to the bytes in data.
	need := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), "tmp_") {
			need[e.Name()] = filepath.Join(src, e.Name())
		}
	}
	var smalls []string
	for name := range need {
		if base, ok := strings.CutSuffix(name, ".pack"); ok && need[base+".idx"] != "" {
			smalls = append(smalls, base)
		}
	}
	recent, err := c.cache.recentOf(smalls)
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	if recent.name != "" {
		for _, base := range recent.of {
			delete(need, base+".pack")
			delete(need, base+".idx")
		}
		data[recent.name+".pack"], data[recent.name+".idx"] = recent.pack, recent.idx
		need[recent.name+".pack"], need[recent.name+".idx"] = "", ""
	}
	have, err := os.ReadDir(pack)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	var stale []string
	for _, e := range have {
		if _, ok := need[e.Name()]; ok {
			held[e.Name()] = true
		} else {
			stale = append(stale, e.Name())
		}
	}
	// A file no longer needed takes the name of one the copy lacks.
	for name := range need {
		if held[name] {
			continue
		}
		for i, old := range stale {
			if filepath.Ext(old) == filepath.Ext(name) && singleFile(filepath.Join(pack, old)) &&
				os.Rename(filepath.Join(pack, old), filepath.Join(pack, name)) == nil {
				stale = append(stale[:i], stale[i+1:]...)
				break
			}
		}
	}
	for _, old := range stale {
		if err := removeAll(filepath.Join(pack, old)); err != nil {
			return err
		}
	}
	files := map[string]stamp{}
	for name, from := range need {
		p := filepath.Join(pack, name)
		if st.unchanged(name, p) {
			files[name] = st.files[name]
			continue
		}
		// Written too shortly before the copy was last handed out for
		// its stamp to tell (or not stamped): read, which costs less than
		// a write, and kept when still the host's bytes. Rewritten, its
		// change time would again be too recent, and every pack would be
		// written anew on every use of a copy in a quick run.
		same := false
		if from == "" {
			same = sameData(p, data[name])
		} else {
			same = sameBytes(p, from)
		}
		if same {
			if s, ok := stampOf(p); ok {
				files[name] = s
				continue
			}
		}
		if from == "" {
			err = writeCopyFile(p, data[name])
		} else {
			err = copyIntoCopy(p, from)
		}
		if err != nil {
			return err
		}
		if s, ok := stampOf(p); ok {
			files[name] = s
		}
	}
	st.files = files
	return nil
}

func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		// A tool may have left a read-only directory behind. WalkDir does
		// not follow links: only the copy's own directories are changed.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		return os.RemoveAll(dir)
	}
	return nil
}

// copyRegular copies the regular file src to dst (made or truncated), a
// file of the host's.
func copyRegular(dst, src string) error {
	return copyFile(dst, src, func(p string) (*os.File, error) {
		return os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	})
}

// copyFile copies the regular file src (openRegular) into the file create
// opens at dst. The copy keeps the source's mtime: git tells a file
// changed within the same second as its index was written ("racily
// clean") by comparing with the index file's own mtime, which a fresh
// copy would move forward, hiding such a change from the squash.
func copyFile(dst, src string, create func(string) (*os.File, error)) error {
	f, err := openRegular(src)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, f); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil {
		return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
	}
	return nil
}

// openRegular opens the regular file src for reading. Anything else there
// (a FIFO would block an open, a link would be followed) is refused
// unopened, and the open itself follows no link and does not block.
func openRegular(src string) (*os.File, error) {
	if fi, err := os.Lstat(src); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", src)
	}
	f, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", src)
	}
	return f, nil
}
