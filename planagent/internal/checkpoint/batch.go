package checkpoint

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1" //nolint:gosec // git's object ids, not a security use
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A run reads the repository's objects many times per task (HEAD, the
// trees a move compares, the blobs it writes, a commit's tree): through one
// long-lived `git cat-file --batch` rather than a git process each, which
// costs milliseconds apiece on a busy machine. Loose objects and packs that
// appear later are found (git looks again on a miss), and HEAD and refs are
// read anew on every request.

// catFile is a long-lived `git cat-file --batch` of the repository.
type catFile struct {
	g   git
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// object is what cat-file says of a name: its id, type and content, or
// missing.
type object struct {
	id, typ string
	data    []byte
	missing bool
}

// get reads the object name names (an id, HEAD, commit^{tree}, …). A
// process that fails is stopped; the next request starts another.
func (c *catFile) get(name string) (object, error) {
	if strings.ContainsAny(name, "\n\x00") {
		return object{}, fmt.Errorf("object name %q", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		if err := c.start(); err != nil {
			return object{}, err
		}
	}
	o, err := c.request(name)
	if err != nil {
		c.stop()
		return object{}, fmt.Errorf("git cat-file --batch: %w", err)
	}
	return o, nil
}

func (c *catFile) start() error {
	// Not under a request's context: the process outlives requests, and
	// close (or planagent's exit, which closes its input) ends it.
	cmd := c.g.cmdEnv(context.Background(), nil, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	return nil
}

func (c *catFile) request(name string) (object, error) {
	o, n, err := c.header(name)
	if err != nil || o.missing {
		return o, err
	}
	buf := make([]byte, n+1) // the content and its newline
	if _, err := io.ReadFull(c.out, buf); err != nil {
		return object{}, err
	}
	o.data = buf[:n]
	return o, nil
}

// header asks for name and reads the answer's header: the object's id,
// type and size, its content still to be read (the caller holds mu).
func (c *catFile) header(name string) (object, int64, error) {
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return object{}, 0, err
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return object{}, 0, err
	}
	f := strings.Fields(header)
	switch {
	case len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous"):
		return object{missing: true}, 0, nil
	case len(f) != 3:
		return object{}, 0, fmt.Errorf("unexpected %q", strings.TrimSpace(header))
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return object{}, 0, fmt.Errorf("size %q", f[2])
	}
	return object{id: f[0], typ: f[1]}, n, nil
}

// blobTo writes the content of blob id to w as it comes out of cat-file,
// never held whole: a blob is as large as the file it was (a task's up to
// max_file_size, the user's any size). max, when not negative, refuses a
// larger one (errBlobTooLarge) before any of it is read. A blob the
// repository lacks, or an object of another type, is an error before
// anything is written. The process is stopped when the content cannot be
// read to its end (w failed, or max): the next request starts another.
func (c *catFile) blobTo(id string, max int64, w io.Writer) error {
	if strings.ContainsAny(id, "\n\x00") {
		return fmt.Errorf("object name %q", id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		if err := c.start(); err != nil {
			return err
		}
	}
	o, n, err := c.header(id)
	switch {
	case err != nil:
		c.stop()
		return fmt.Errorf("git cat-file --batch: %w", err)
	case o.missing:
		return fmt.Errorf("blob %s is not in the repository", short(id))
	case o.typ != "blob" || (max >= 0 && n > max):
		c.kill()
		if o.typ != "blob" {
			return fmt.Errorf("%s is a %s, not a blob", short(id), o.typ)
		}
		return fmt.Errorf("blob %s: %w (%d bytes, at most %d)", short(id), errBlobTooLarge, n, max)
	}
	if _, err := io.CopyN(w, c.out, n); err != nil {
		c.kill()
		return err
	}
	if b, err := c.out.ReadByte(); err != nil || b != '\n' {
		c.kill()
		return fmt.Errorf("git cat-file --batch: no newline after blob %s", short(id))
	}
	return nil
}

// errBlobTooLarge is a blob above what its reader takes.
var errBlobTooLarge = errors.New("too large")

// blobBytes reads blob id, at most max bytes of it (a link's target, an
// attributes file).
func (c *catFile) blobBytes(id string, max int64) ([]byte, error) {
	var b bytes.Buffer
	if err := c.blobTo(id, max, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// kill ends the process at once, the rest of an answer unread (the caller
// holds mu): closing its input would wait for it to write all of it.
func (c *catFile) kill() {
	if c.cmd != nil {
		_ = c.cmd.Process.Kill()
	}
	c.stop()
}

// stop ends the process (the caller holds mu).
func (c *catFile) stop() {
	if c.cmd == nil {
		return
	}
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.cmd, c.in, c.out = nil, nil, nil
}

// close ends the process, if one runs.
func (c *catFile) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop()
}

// objectStore reads the repository's objects through the long-lived
// cat-file (trees, blobs, commits) and writes trees and commits in-process,
// keeping what it learnt of commits (their trees, first parents, messages,
// whether they hold a submodule) and the trees read or written lately.
type objectStore struct {
	cat          *catFile
	objectFormat string
	msgMu        sync.Mutex
	msgs         map[string]string // Squash's messages, for Apply
	trees        map[string]string // commits' trees (commitTree)
	parents      map[string]string // commits' first parents (firstParent)
	plain        map[string]bool   // commits known to have no submodule
	treeData     treeCache         // trees' contents, read or written lately
	// listMu makes the squashes of one base that run at once (a run's
	// parallel first tasks) list its submodules once: the others wait for
	// that listing and find the base plain.
	listMu sync.Mutex
}

// commitTree is the tree of commit, read once and then remembered.
func (ob *objectStore) commitTree(commit string) (string, error) {
	ob.msgMu.Lock()
	tree, ok := ob.trees[commit]
	ob.msgMu.Unlock()
	if ok {
		return tree, nil
	}
	o, err := ob.cat.get(commit)
	if err != nil {
		return "", err
	}
	if o.missing || o.typ != "commit" {
		return "", fmt.Errorf("%s is not a commit of the repository", short(commit))
	}
	line, _, _ := bytes.Cut(o.data, []byte{'\n'})
	tree, ok = strings.CutPrefix(string(line), "tree ")
	if !ok {
		return "", fmt.Errorf("commit %s has no tree", short(commit))
	}
	ob.rememberTree(commit, tree)
	return tree, nil
}

func (ob *objectStore) rememberTree(commit, tree string) {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	if ob.trees == nil || len(ob.trees) >= 4096 {
		ob.trees = map[string]string{}
	}
	ob.trees[commit] = tree
}

// diffTreesBatch lists the paths that differ between the trees of old and
// new as `git diff-tree -r --no-renames` would, with their entries on each
// side, reading only the subtrees that differ. trees, when not nil, gets
// the trees of new that differ from old's (new's root tree included):
// with the blobs of to and new's commit, every object new has that old
// lacks.
func (ob *objectStore) diffTreesBatch(old, new string, trees map[string]bool) ([]string, map[string]entry, map[string]entry, error) {
	from, to := map[string]entry{}, map[string]entry{}
	ot, err := ob.commitTree(old)
	if err != nil {
		return nil, nil, nil, err
	}
	nt, err := ob.commitTree(new)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := ob.diffTree("", ot, nt, from, to, trees); err != nil {
		return nil, nil, nil, err
	}
	var paths []string
	for p := range from {
		paths = append(paths, p)
	}
	for p := range to {
		if _, ok := from[p]; !ok {
			paths = append(paths, p)
		}
	}
	// Full paths in byte order are git's tree order: a directory sorts as
	// its name and a slash, which is how its files' paths go on.
	sort.Strings(paths)
	return paths, from, to, nil
}

// treeEntry is an entry of a tree object.
type treeEntry struct{ mode, id string }

// diffTree adds to from and to the files under prefix that differ between
// trees a and b ("" for none). Both are walked in their order, git's, and
// only the entries that differ are taken apart: a task's move compares two
// trees of a directory of a thousand files that differ in one. trees,
// when not nil, gets b and the trees under it that differ.
func (ob *objectStore) diffTree(prefix, a, b string, from, to map[string]entry, trees map[string]bool) error {
	if a == b {
		return nil
	}
	if trees != nil && b != "" {
		trees[b] = true
	}
	da, err := ob.tree(a)
	if err != nil {
		return err
	}
	db, err := ob.tree(b)
	if err != nil {
		return err
	}
	ia, ib := treeIter{id: a, data: da, size: ob.idSize()}, treeIter{id: b, data: db, size: ob.idSize()}
	// The entries of one side only, by name: a file and a directory of
	// the same name sort apart ("a" before "a-b" before "a/"), and are
	// paired here.
	var onlyA, onlyB map[string]treeEntry
	x, okA, err := ia.next()
	if err != nil {
		return err
	}
	y, okB, err := ib.next()
	if err != nil {
		return err
	}
	for okA || okB {
		c := 0
		switch {
		case !okB:
			c = -1
		case !okA:
			c = 1
		default:
			c = compareTreeKeys(x, y)
		}
		switch {
		case c == 0:
			if !bytes.Equal(x.mode, y.mode) || !bytes.Equal(x.id, y.id) {
				if err := ob.diffEntry(prefix+string(x.name), x.entry(), y.entry(), from, to, trees); err != nil {
					return err
				}
			}
		case c < 0:
			if onlyA == nil {
				onlyA = map[string]treeEntry{}
			}
			onlyA[string(x.name)] = x.entry()
		default:
			if onlyB == nil {
				onlyB = map[string]treeEntry{}
			}
			onlyB[string(y.name)] = y.entry()
		}
		if c <= 0 {
			if x, okA, err = ia.next(); err != nil {
				return err
			}
		}
		if c >= 0 {
			if y, okB, err = ib.next(); err != nil {
				return err
			}
		}
	}
	for name, ex := range onlyA {
		ey := onlyB[name]
		delete(onlyB, name)
		if err := ob.diffEntry(prefix+name, ex, ey, from, to, trees); err != nil {
			return err
		}
	}
	for name, ey := range onlyB {
		if err := ob.diffEntry(prefix+name, treeEntry{}, ey, from, to, trees); err != nil {
			return err
		}
	}
	return nil
}

func (ob *objectStore) diffEntry(path string, x, y treeEntry, from, to map[string]entry, trees map[string]bool) error {
	if x == y {
		return nil // the same once modes are normalised (100664 is 100644)
	}
	xt, yt := x.mode == "40000", y.mode == "40000"
	var sa, sb string
	if xt {
		sa = x.id
	} else if x.id != "" {
		from[path] = entry{mode: x.mode, blob: x.id}
	}
	if yt {
		sb = y.id
	} else if y.id != "" {
		to[path] = entry{mode: y.mode, blob: y.id}
	}
	if xt || yt {
		return ob.diffTree(path+"/", sa, sb, from, to, trees)
	}
	return nil
}

// rawEntry is an entry of a tree object as it lies in the object.
type rawEntry struct{ mode, name, id []byte }

func (e rawEntry) isTree() bool { return string(e.mode) == "40000" }

func (e rawEntry) entry() treeEntry {
	return treeEntry{mode: normalMode(string(e.mode)), id: hex.EncodeToString(e.id)}
}

// compareTreeKeys orders entries as git sorts a tree: by name, a
// directory's as if a slash followed it.
func compareTreeKeys(a, b rawEntry) int {
	n := min(len(a.name), len(b.name))
	if c := bytes.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	key := func(e rawEntry) byte {
		switch {
		case len(e.name) > n:
			return e.name[n]
		case e.isTree():
			return '/'
		}
		return 0
	}
	return int(key(a)) - int(key(b))
}

// treeIter reads a tree object's entries in order.
type treeIter struct {
	id   string
	data []byte
	size int // of an object id
}

func (t *treeIter) next() (rawEntry, bool, error) {
	if len(t.data) == 0 {
		return rawEntry{}, false, nil
	}
	sp := bytes.IndexByte(t.data, ' ')
	nul := bytes.IndexByte(t.data, 0)
	if sp < 0 || nul < sp || nul+1+t.size > len(t.data) {
		return rawEntry{}, false, fmt.Errorf("tree %s: malformed", short(t.id))
	}
	e := rawEntry{mode: t.data[:sp], name: t.data[sp+1 : nul], id: t.data[nul+1 : nul+1+t.size]}
	t.data = t.data[nul+1+t.size:]
	return e, true, nil
}

func (ob *objectStore) idSize() int {
	if ob.objectFormat == "sha256" {
		return sha256.Size
	}
	return sha1.Size
}

// treeEntries reads a tree's entries by name ("" is the empty tree). Modes
// are as git prints them (100644, 100755, 120000, 160000; 40000 a tree).
func (ob *objectStore) treeEntries(id string) (map[string]treeEntry, error) {
	data, err := ob.tree(id)
	if err != nil {
		return nil, err
	}
	m := map[string]treeEntry{}
	it := treeIter{id: id, data: data, size: ob.idSize()}
	for {
		e, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return m, nil
		}
		m[string(e.name)] = e.entry()
	}
}

// tree is the content of tree id ("" is the empty tree): from the trees
// read or written lately (a task's root tree is written by its squash,
// then read by the move, the next copy and the next squash), else read.
func (ob *objectStore) tree(id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	if data, ok := ob.treeData.get(id); ok {
		return data, nil
	}
	o, err := ob.cat.get(id)
	if err != nil {
		return nil, err
	}
	if o.missing || o.typ != "tree" {
		return nil, fmt.Errorf("tree %s is not in the repository", short(id))
	}
	ob.treeData.put(id, o.data)
	return o.data, nil
}

// treeCache holds the contents of the trees read or written lately, by id,
// up to treeCacheBytes in all; the oldest go first. Contents are never
// changed once in: an id names one content.
type treeCache struct {
	mu    sync.Mutex
	data  map[string][]byte
	order []string
	bytes int
}

const treeCacheBytes = 4 << 20

func (c *treeCache) get(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.data[id]
	return data, ok
}

func (c *treeCache) put(id string, data []byte) {
	if len(data) > treeCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[id]; ok {
		return
	}
	if c.data == nil {
		c.data = map[string][]byte{}
	}
	for c.bytes+len(data) > treeCacheBytes && len(c.order) > 0 {
		c.bytes -= len(c.data[c.order[0]])
		delete(c.data, c.order[0])
		c.order = c.order[1:]
	}
	c.data[id], c.order, c.bytes = data, append(c.order, id), c.bytes+len(data)
}

// normalMode is a tree entry's mode as diff-tree prints a file's: old
// repositories wrote 100664 and the like.
func normalMode(mode string) string {
	switch mode {
	case "40000", "120000", "160000", "100755":
		return mode
	}
	if strings.HasPrefix(mode, "100") {
		if m, err := strconv.ParseUint(mode, 8, 32); err == nil && m&0o100 != 0 {
			return "100755"
		}
		return "100644"
	}
	return mode
}

// writeCommit writes a commit of tree on parents with msg as a loose
// object in the objects directory dir (a quarantine), as `git commit-tree`
// with the run's identity would, and returns its id: no git process.
func (ob *objectStore) writeCommit(dir, tree string, parents []string, msg string, now time.Time) (string, error) {
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	who := fmt.Sprintf("CodeAgent <codeagent@localhost> %d %s", now.Unix(), now.Format("-0700"))
	b.WriteString("author " + who + "\n")
	b.WriteString("committer " + who + "\n\n")
	b.WriteString(msg)
	if !strings.HasSuffix(msg, "\n") {
		b.WriteString("\n")
	}
	id, err := writeLoose(dir, ob.objectFormat, "commit", []byte(b.String()))
	if err == nil && len(parents) > 0 {
		ob.rememberParent(id, parents[0])
	}
	return id, err
}

// writeLoose writes an object into the objects directory dir as git
// stores a loose one, and returns its id.
func writeLoose(dir, objectFormat, typ string, data []byte) (string, error) {
	head := fmt.Sprintf("%s %d\x00", typ, len(data))
	h := objectHash(objectFormat)
	h.Write([]byte(head))
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	var z bytes.Buffer
	// Git's own level for loose objects (core.looseCompression unset):
	// a tree of a thousand entries takes 0.5 ms at it, 1.9 ms at zlib's
	// default, on every squash that changes it.
	w, err := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	if err != nil {
		return "", err
	}
	_, _ = w.Write([]byte(head))
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		return "", err
	}
	fan := filepath.Join(dir, id[:2])
	if err := os.MkdirAll(fan, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(fan, id[2:])
	if _, err := os.Lstat(p); err == nil {
		return id, nil
	}
	tmp := filepath.Join(fan, "tmp_obj_"+id[2:])
	if err := os.WriteFile(tmp, z.Bytes(), 0o444); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return id, nil
}
