package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// objectCache is where the copies' objects come from: a bare repository
// beside the copies' state, fed from the repository by one `git
// pack-objects` per commit it lacks (only what the commits it already has
// do not reach), so a copy costs a file copy of its packs rather than
// packing the whole history again (copyObjects). Squashes and merges add
// their loose objects to it as small packs, which copies get as one.
type objectCache struct {
	dir          string // the bare repository
	gitDir       string // the repository whose history is packed into it
	objectFormat string
	// alternates is where pack-objects reads the repository's objects:
	// its own and the pending ones (pendingObjects.alternates).
	alternates string
	// rw is held shared while git reads the cache or a copy copies its
	// packs, exclusively to make it or merge its packs (a repack removes
	// packs); mu guards what it holds (cached, tips, small, recent) and
	// packing a commit into it.
	rw     sync.RWMutex
	mu     sync.Mutex
	cached map[string]bool // commits whose history the cache holds
	tips   []string        // the commits packed last into it
	// small are the packs this process wrote into the cache from a
	// squash's or a merge's loose objects, by name, with their objects: a
	// copy gets them all as one pack (copyObjects).
	small map[string][]packEntry
	// recent is the one pack copies get for the small packs (recentOf),
	// kept until they change.
	recent recentPack
}

// newObjectCache is the cache in dir of the repository at gitDir, whose
// objects are read from alternates.
func newObjectCache(dir, gitDir, objectFormat, alternates string) *objectCache {
	return &objectCache{dir: dir, gitDir: gitDir, objectFormat: objectFormat, alternates: alternates}
}

// read holds the cache for reading, whatever it holds, until release.
func (c *objectCache) read() { c.rw.RLock() }

// remove deletes the cache and forgets what it held, holding it
// exclusively meanwhile, and while also runs: what must not meet a cache
// being made (the removal of the leftovers beside it).
func (c *objectCache) remove(also func() []error) []error {
	c.rw.Lock()
	defer c.rw.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := []error{os.RemoveAll(c.dir)}
	c.cached, c.tips, c.small, c.recent = nil, nil, nil, recentPack{}
	return append(errs, also()...)
}

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
func (c *objectCache) recentOf(packs []string) (recentPack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var of []string
	var entries []packEntry
	for _, name := range packs {
		if e, ok := c.small[name]; ok {
			of = append(of, name)
			entries = append(entries, e...)
		}
	}
	if len(of) == 0 {
		return recentPack{}, nil
	}
	sort.Strings(of)
	key := strings.Join(of, ",")
	if c.recent.key == key {
		return c.recent, nil
	}
	name, pack, idx, err := assemblePack(c.objectFormat, entries)
	if err != nil {
		return recentPack{}, err
	}
	c.recent = recentPack{key: key, of: of, name: name, pack: pack, idx: idx}
	return c.recent, nil
}

// fill makes the object cache hold commit: made on first use, the
// commit packed into it when it lacks it, its packs merged when they are
// more than limit. Exclusive, and only when there is something to do.
func (c *objectCache) fill(ctx context.Context, commit string, limit int) error {
	c.rw.RLock()
	c.mu.Lock()
	ready := c.cached[commit] && c.packs() <= limit
	c.mu.Unlock()
	c.rw.RUnlock()
	if ready {
		return nil
	}
	c.rw.Lock()
	defer c.rw.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	cache := c.dir
	cg := git{dir: filepath.Dir(cache), gitDir: cache, hardened: true}
	if fi, err := os.Lstat(filepath.Join(cache, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		// Made aside and renamed into place: an init cut short (the
		// prewarm cancelled) must not leave a cache that looks made.
		_ = os.RemoveAll(cache)
		c.cached, c.tips, c.small, c.recent = nil, nil, nil, recentPack{}
		if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp(filepath.Dir(cache), "objects.git.new-")
		if err != nil {
			return err
		}
		if _, err := cg.run(ctx, "init", "-q", "--bare", "--template=", "--object-format="+c.objectFormat, tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return err
		}
		if err := os.Rename(tmp, cache); err != nil {
			_ = os.RemoveAll(tmp)
			return err
		}
	}
	if !c.cached[commit] {
		if err := c.packInto(ctx, commit, filepath.Join(cache, "objects", "pack")); err != nil {
			return err
		}
		if err := c.mark(commit); err != nil {
			return err
		}
	}
	if c.packs() > limit {
		// One pack per commit: merged now and then, so a copy stays a few
		// files (each file copied costs, and so does each pack for every
		// git command in the copy). A geometric repack rewrites only the
		// small packs, so the cost per commit stays flat as history grows.
		if _, err := cg.run(ctx, "repack", "-d", "-q", "--geometric=2"); err != nil {
			return err
		}
		// The small packs merged away take their objects with them.
		for name := range c.small {
			if _, err := os.Lstat(filepath.Join(cache, "objects", "pack", name+".pack")); err != nil {
				delete(c.small, name)
			}
		}
	}
	return nil
}

// packs is how many packs the object cache has.
func (c *objectCache) packs() int {
	entries, _ := os.ReadDir(filepath.Join(c.objects(), "pack"))
	return packs(entries)
}

// hold reports whether the object cache holds every one of commits, and
// then holds it for reading until release.
func (c *objectCache) hold(commits ...string) bool {
	c.rw.RLock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, commit := range commits {
		if !c.cached[commit] {
			c.rw.RUnlock()
			return false
		}
	}
	return true
}

// objects is the object cache's objects directory.
func (c *objectCache) objects() string { return filepath.Join(c.dir, "objects") }

// release ends a hold.
func (c *objectCache) release() { c.rw.RUnlock() }

// mark records that the cache holds commit and its history (the caller
// holds mu).
func (c *objectCache) mark(commit string) error {
	// A ref per commit, so a repack keeps what the copies need.
	keep := filepath.Join(c.dir, "refs", "keep")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(keep, commit), []byte(commit+"\n"), 0o644); err != nil {
		return err
	}
	if c.cached == nil {
		c.cached = map[string]bool{}
	}
	c.cached[commit] = true
	c.tips = append(c.tips, commit)
	if len(c.tips) > maxCacheTips {
		c.tips = c.tips[len(c.tips)-maxCacheTips:]
	}
	return nil
}

// addLoose packs the loose objects among files of quarantine, made with
// the cache as their alternate on top of a commit it holds, into the
// cache: with them it holds commit (the caller holds it: hold).
// Objects this does not read whole (a pack git wrote for a file past
// core.bigFileThreshold, an object past maxCachedObject) leave the cache
// as it is, without commit: a copy of it has git pack it there.
func (c *objectCache) addLoose(quarantine string, files []string, commit string) error {
	hexLen := 40
	if c.objectFormat == "sha256" {
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
	name, entries, err := writePack(filepath.Join(c.objects(), "pack"), c.objectFormat, objs)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.small == nil {
		c.small = map[string][]packEntry{}
	}
	c.small[name] = entries
	return c.mark(commit)
}

// packInto writes a pack of commit's history into the cache's pack
// directory, without what the commits packed last already reach: one
// process of the repository's git (the objects are only read and
// compressed) where a fetch took three.
func (c *objectCache) packInto(ctx context.Context, commit, dir string) error {
	in := commit + "\n"
	for _, t := range c.tips {
		in += "^" + t + "\n"
	}
	g := git{dir: filepath.Dir(c.dir), gitDir: c.gitDir, hardened: true}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The repository's objects are read as an alternate of the cache's:
	// pack-objects' temporary files go to the cache (a planagent killed
	// meanwhile leaves nothing in the user's objects), and the rename
	// into place stays on one file system.
	env := []string{"GIT_OBJECT_DIRECTORY=" + filepath.Dir(dir), "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + c.alternates}
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
