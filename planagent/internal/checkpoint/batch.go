package checkpoint

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1" //nolint:gosec // git's object ids, not a security use
	"crypto/sha256"
	"encoding/hex"
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
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return object{}, err
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return object{}, err
	}
	f := strings.Fields(header)
	switch {
	case len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous"):
		return object{missing: true}, nil
	case len(f) != 3:
		return object{}, fmt.Errorf("unexpected %q", strings.TrimSpace(header))
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return object{}, fmt.Errorf("size %q", f[2])
	}
	buf := make([]byte, n+1) // the content and its newline
	if _, err := io.ReadFull(c.out, buf); err != nil {
		return object{}, err
	}
	return object{id: f[0], typ: f[1], data: buf[:n]}, nil
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

// commitTree is the tree of commit, read once and then remembered.
func (r *Repo) commitTree(commit string) (string, error) {
	r.msgMu.Lock()
	tree, ok := r.trees[commit]
	r.msgMu.Unlock()
	if ok {
		return tree, nil
	}
	o, err := r.cat.get(commit)
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
	r.rememberTree(commit, tree)
	return tree, nil
}

func (r *Repo) rememberTree(commit, tree string) {
	r.msgMu.Lock()
	defer r.msgMu.Unlock()
	if r.trees == nil || len(r.trees) >= 4096 {
		r.trees = map[string]string{}
	}
	r.trees[commit] = tree
}

// diffTreesBatch lists the paths that differ between the trees of old and
// new as `git diff-tree -r --no-renames` would, with their entries on each
// side, reading only the subtrees that differ.
func (r *Repo) diffTreesBatch(old, new string) ([]string, map[string]entry, map[string]entry, error) {
	from, to := map[string]entry{}, map[string]entry{}
	ot, err := r.commitTree(old)
	if err != nil {
		return nil, nil, nil, err
	}
	nt, err := r.commitTree(new)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := r.diffTree("", ot, nt, from, to); err != nil {
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
// trees a and b ("" for none).
func (r *Repo) diffTree(prefix, a, b string, from, to map[string]entry) error {
	if a == b {
		return nil
	}
	ea, err := r.treeEntries(a)
	if err != nil {
		return err
	}
	eb, err := r.treeEntries(b)
	if err != nil {
		return err
	}
	for name, x := range ea {
		y := eb[name]
		if x == y {
			continue
		}
		if err := r.diffEntry(prefix+name, x, y, from, to); err != nil {
			return err
		}
	}
	for name, y := range eb {
		if _, ok := ea[name]; !ok {
			if err := r.diffEntry(prefix+name, treeEntry{}, y, from, to); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Repo) diffEntry(path string, x, y treeEntry, from, to map[string]entry) error {
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
		return r.diffTree(path+"/", sa, sb, from, to)
	}
	return nil
}

// treeEntries reads a tree's entries by name ("" is the empty tree). Modes
// are as git prints them (100644, 100755, 120000, 160000; 40000 a tree).
func (r *Repo) treeEntries(id string) (map[string]treeEntry, error) {
	m := map[string]treeEntry{}
	if id == "" {
		return m, nil
	}
	o, err := r.cat.get(id)
	if err != nil {
		return nil, err
	}
	if o.missing || o.typ != "tree" {
		return nil, fmt.Errorf("tree %s is not in the repository", short(id))
	}
	size := sha1.Size
	if r.objectFormat == "sha256" {
		size = sha256.Size
	}
	data := o.data
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || nul+1+size > len(data) {
			return nil, fmt.Errorf("tree %s: malformed", short(id))
		}
		mode, name := string(data[:sp]), string(data[sp+1:nul])
		m[name] = treeEntry{mode: normalMode(mode), id: hex.EncodeToString(data[nul+1 : nul+1+size])}
		data = data[nul+1+size:]
	}
	return m, nil
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
func (r *Repo) writeCommit(dir, tree string, parents []string, msg string, now time.Time) (string, error) {
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
	id, err := writeLoose(dir, r.objectFormat, "commit", []byte(b.String()))
	if err == nil && len(parents) > 0 {
		r.rememberParent(id, parents[0])
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
