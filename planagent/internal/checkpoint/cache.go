package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// recentPack is one pack of the objects of several small packs (of).
type recentPack struct {
	key       string
	of        []string
	name      string
	pack, idx []byte
}

// recentOf is the pack of the small packs among packs (the cache's packs
// by name), put together from their entries and kept until they change;
// an empty one when there is none.
func (r *Repo) recentOf(packs []string) (recentPack, error) {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	var of []string
	var entries []packEntry
	for _, name := range packs {
		if e, ok := r.small[name]; ok {
			of = append(of, name)
			entries = append(entries, e...)
		}
	}
	if len(of) == 0 {
		return recentPack{}, nil
	}
	sort.Strings(of)
	key := strings.Join(of, ",")
	if r.recent.key == key {
		return r.recent, nil
	}
	name, pack, idx, err := assemblePack(r.objectFormat, entries)
	if err != nil {
		return recentPack{}, err
	}
	r.recent = recentPack{key: key, of: of, name: name, pack: pack, idx: idx}
	return r.recent, nil
}

// fillCache makes the object cache hold commit: made on first use, the
// commit packed into it when it lacks it, its packs merged when they are
// more than limit. Exclusive, and only when there is something to do.
func (r *Repo) fillCache(ctx context.Context, commit string, limit int) error {
	r.cacheRW.RLock()
	r.cacheMu.Lock()
	ready := r.cached[commit] && r.cachePacks() <= limit
	r.cacheMu.Unlock()
	r.cacheRW.RUnlock()
	if ready {
		return nil
	}
	r.cacheRW.Lock()
	defer r.cacheRW.Unlock()
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	cache := r.cacheDir()
	cg := git{dir: filepath.Dir(cache), gitDir: cache, hardened: true}
	if fi, err := os.Lstat(filepath.Join(cache, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		// Made aside and renamed into place: an init cut short (the
		// prewarm cancelled) must not leave a cache that looks made.
		_ = os.RemoveAll(cache)
		r.cached, r.cacheTips, r.small, r.recent = nil, nil, nil, recentPack{}
		if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp(filepath.Dir(cache), "objects.git.new-")
		if err != nil {
			return err
		}
		if _, err := cg.run(ctx, "init", "-q", "--bare", "--template=", "--object-format="+r.objectFormat, tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return err
		}
		if err := os.Rename(tmp, cache); err != nil {
			_ = os.RemoveAll(tmp)
			return err
		}
	}
	if !r.cached[commit] {
		if err := r.packInto(ctx, commit, filepath.Join(cache, "objects", "pack")); err != nil {
			return err
		}
		if err := r.markCached(commit); err != nil {
			return err
		}
	}
	if r.cachePacks() > limit {
		// One pack per commit: merged now and then, so a copy stays a few
		// files (each file copied costs, and so does each pack for every
		// git command in the copy). A geometric repack rewrites only the
		// small packs, so the cost per commit stays flat as history grows.
		if _, err := cg.run(ctx, "repack", "-d", "-q", "--geometric=2"); err != nil {
			return err
		}
		// The small packs merged away take their objects with them.
		for name := range r.small {
			if _, err := os.Lstat(filepath.Join(cache, "objects", "pack", name+".pack")); err != nil {
				delete(r.small, name)
			}
		}
	}
	return nil
}

// cachePacks is how many packs the object cache has.
func (r *Repo) cachePacks() int {
	entries, _ := os.ReadDir(filepath.Join(r.cacheDir(), "objects", "pack"))
	return packs(entries)
}

// readCache reports whether the object cache holds every one of commits,
// and then holds it for reading (the caller releases cacheRW's read lock).
func (r *Repo) readCache(commits ...string) bool {
	r.cacheRW.RLock()
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	for _, c := range commits {
		if !r.cached[c] {
			r.cacheRW.RUnlock()
			return false
		}
	}
	return true
}

// cacheDir is the object cache: a bare repository in the host's private
// directory.
func (r *Repo) cacheDir() string { return filepath.Join(filepath.Dir(r.private), "objects.git") }

// cacheObjects is the object cache's objects directory.
func (r *Repo) cacheObjects() string { return filepath.Join(r.cacheDir(), "objects") }

// markCached records that the cache holds commit and its history (the
// caller holds cacheMu).
func (r *Repo) markCached(commit string) error {
	// A ref per commit, so a repack keeps what the copies need.
	keep := filepath.Join(r.cacheDir(), "refs", "keep")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(keep, commit), []byte(commit+"\n"), 0o644); err != nil {
		return err
	}
	if r.cached == nil {
		r.cached = map[string]bool{}
	}
	r.cached[commit] = true
	r.cacheTips = append(r.cacheTips, commit)
	if len(r.cacheTips) > maxCacheTips {
		r.cacheTips = r.cacheTips[len(r.cacheTips)-maxCacheTips:]
	}
	return nil
}

// cacheLoose packs the loose objects among files of quarantine, made with
// the cache as their alternate on top of a commit it holds, into the
// cache: with them it holds commit (the caller holds cacheRW for reading).
// Objects this does not read whole (a pack git wrote for a file past
// core.bigFileThreshold, an object past maxCachedObject) leave the cache
// as it is, without commit: a copy of it has git pack it there.
func (r *Repo) cacheLoose(quarantine string, files []string, commit string) error {
	hexLen := 40
	if r.objectFormat == "sha256" {
		hexLen = 64
	}
	for _, rel := range files {
		if strings.HasPrefix(rel, "pack"+string(filepath.Separator)) {
			return nil
		}
	}
	objs, err := readLoose(quarantine, files, hexLen)
	if errors.Is(err, errObjectTooLarge) {
		return nil
	}
	if err != nil {
		return err
	}
	name, entries, err := writePack(filepath.Join(r.cacheObjects(), "pack"), r.objectFormat, objs)
	if err != nil {
		return err
	}
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.small == nil {
		r.small = map[string][]packEntry{}
	}
	r.small[name] = entries
	return r.markCached(commit)
}

// packInto writes a pack of commit's history into the cache's pack
// directory, without what the commits packed last already reach: one
// process of the repository's git (the objects are only read and
// compressed) where a fetch took three.
func (r *Repo) packInto(ctx context.Context, commit, dir string) error {
	in := commit + "\n"
	for _, t := range r.cacheTips {
		in += "^" + t + "\n"
	}
	g := git{dir: filepath.Dir(r.private), gitDir: r.gitDir, hardened: true}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The repository's objects are read as an alternate of the cache's:
	// pack-objects' temporary files go to the cache (a planagent killed
	// meanwhile leaves nothing in the user's objects), and the rename
	// into place stays on one file system.
	env := []string{"GIT_OBJECT_DIRECTORY=" + filepath.Dir(dir), "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + r.objectsAlternates()}
	// No delta search: a commit's new objects are few, and the repack
	// that merges the packs makes the deltas.
	if _, err := g.runEnv(ctx, env, []byte(in), "pack-objects", "--revs", "-q", "--window=0", filepath.Join(dir, "pack")); err != nil {
		return err
	}
	return nil
}

// maxCacheTips is how many commits packed last the next pack leaves out
// (with their history): the copies of a run are of the integration
// branch's last few commits, so more would only lengthen the walk.
const maxCacheTips = 4

// maxCachePacks is how many packs the object cache may hold before its
// small ones are merged by the next recycle (off the tasks' path: a merge
// took 40 ms on average and up to 70 at a thousand tasks, and landed on the
// acceptance copy, the first copy after the squash that added the pack);
// a copy made on a task's path merges them only past maxCachePacksOnPath
// (a run without a pool has no recycles).
const (
	maxCachePacks       = 16
	maxCachePacksOnPath = 4 * maxCachePacks
)

func packs(entries []os.DirEntry) int {
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pack") {
			n++
		}
	}
	return n
}
