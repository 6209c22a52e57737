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
	"strconv"
	"strings"
	"syscall"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// A recycled copy is brought from the commit it was made at to the next
// one here rather than by `git checkout`, when nothing about it is unusual.
// The index saved when it was made says what each tracked file was (its
// stat data), the two trees' difference says what changes, and only the
// files that differ from either are written: in place where a single
// regular file is there, since on a virtual disk a new file (a new inode)
// costs ten times a rewrite. The index and HEAD are then rewritten as git
// would leave them. Whatever git would do differently is left to git
// (errGitCheckout): a .gitattributes anywhere that sets a conversion
// (end-of-line, encoding, filters, ident: see neutralAttributes)
// conversions), a submodule, an attributes file of the user's, a file
// system without links or exec bits, an index this does not read, a
// tracked directory the agent made into something else.

var errGitCheckout = errors.New("left to git checkout")

// maxLinkTarget is the longest link target read from a blob: Linux's
// PATH_MAX, and far more than any a tree of a repository holds.
const maxLinkTarget = 4096

// readIndex reads the entries of the index file p and its modification
// time, refusing (errGitCheckout) what a plain checkout never writes:
// version 4, extended flags, a stage other than 0.
func readIndex(p string, idLen int) ([]gitindex.Entry, syscall.Timespec, error) {
	entries, mtime, err := gitindex.Read(p, idLen)
	if err != nil {
		return nil, mtime, errGitCheckout
	}
	for _, e := range entries {
		if e.Flags&(gitindex.FlagExtended|gitindex.FlagStage) != 0 {
			return nil, mtime, errGitCheckout
		}
	}
	return entries, mtime, nil
}

// treeMode is an index mode as a tree's mode string.
func treeMode(m uint32) string { return strconv.FormatUint(uint64(m), 8) }

// plainPath reports whether every component of p is one git checks out.
func plainPath(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." || isDotGit(part) {
			return false
		}
	}
	return true
}

func isAttributes(p string) bool {
	return p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes")
}

// neutralBlobs reports whether every attributes file among the blobs ids
// is neutral (neutralAttributes); each blob's verdict is kept.
func (c *copyMaker) neutralBlobs(ids []string) bool {
	var unknown []string
	c.attrMu.Lock()
	for _, id := range ids {
		neutral, seen := c.neutral[id]
		if seen && !neutral {
			c.attrMu.Unlock()
			return false
		}
		if !seen {
			unknown = append(unknown, id)
		}
	}
	c.attrMu.Unlock()
	if len(unknown) == 0 {
		return true
	}
	verdicts := make(map[string]bool, len(unknown))
	for _, id := range unknown {
		data, err := c.cat.blobBytes(id, maxAttributesFile)
		if err != nil {
			return false // unread (too large for a look here): left to git
		}
		verdicts[id] = neutralAttributes(data)
	}
	c.attrMu.Lock()
	defer c.attrMu.Unlock()
	if c.neutral == nil {
		c.neutral = map[string]bool{}
	}
	all := true
	for id, neutral := range verdicts {
		c.neutral[id] = neutral
		all = all && neutral
	}
	return all
}

// maxAttributesFile is the largest attributes file read to tell whether
// it is neutral; a larger one is left to git.
const maxAttributesFile = 1 << 20

// neutralAttributes reports whether a .gitattributes file changes nothing
// a checkout writes: none of its lines sets a conversion (text, eol, crlf,
// filter, ident, working-tree-encoding) other than turning text off
// ("-text", "-crlf", or the "binary" macro, which files are written as
// stored anyway), and it defines no macro that could hide one. Attributes
// for diff, merge, export, whitespace or linguist change no file. A
// quoted pattern is not read here: git is left to it.
func neutralAttributes(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' || strings.HasPrefix(line, "[attr]") {
			return false
		}
		for _, a := range strings.Fields(line)[1:] {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-!"), "=")
			switch name {
			case "text", "crlf":
				if a != "-text" && a != "-crlf" {
					return false
				}
			case "eol", "filter", "ident", "working-tree-encoding":
				return false
			}
		}
	}
	return true
}

// checkoutCopy brings the copy at dir, made at was (the index saved then
// says what it held), to commit: its files, index and HEAD. It returns
// errGitCheckout when git must do it; an error may leave the copy half
// made (the caller then checks it out with git, from the saved index).
// A trusted copy's files are taken to be as its saved index says: only
// the paths that differ between the two commits are looked at, and the
// directories their removal empties are removed (no clean follows).
func (c *copyMaker) checkoutCopy(ctx context.Context, dir, was, commit string, trusted bool) error {
	if was == "" || !c.plainCheckout(ctx) {
		return errGitCheckout
	}
	co, err := c.startCheckout(dir, was, commit, trusted)
	if err != nil {
		return err
	}
	if err := co.plain(); err != nil {
		return err
	}
	co.plan()
	if err := co.removeGone(); err != nil {
		return err
	}
	if err := co.writeFiles(); err != nil {
		return err
	}
	return co.finish()
}

// copyCheckout is one checkoutCopy, in steps: what the copy held and what
// changes (startCheckout), whether this process may do it (plain), which
// files are written (plan), then the removals, the writes, and the index
// and HEAD git would leave (finish).
type copyCheckout struct {
	c       *copyMaker
	dir     string
	commit  string
	trusted bool
	// saved is the copy's saved index, written at savedAt.
	saved   []gitindex.Entry
	savedAt syscall.Timespec
	// paths are what differs between the two commits, to commit's entries
	// of those paths (a path missing from to is removed).
	paths []string
	to    map[string]entry
	// write are the files to write; index the entries of the index
	// written last (those kept, and those written once they are).
	write map[string]entry
	index map[string]gitindex.Entry
}

// startCheckout reads the copy's saved index and what differs between
// was and commit; errGitCheckout when either cannot be read here.
func (c *copyMaker) startCheckout(dir, was, commit string, trusted bool) (*copyCheckout, error) {
	co := &copyCheckout{c: c, dir: dir, commit: commit, trusted: trusted}
	var err error
	if co.saved, co.savedAt, err = readIndex(filepath.Join(c.states.of(dir), "index"), c.store.idSize()); err != nil {
		return nil, err
	}
	co.to = map[string]entry{}
	if was != commit {
		if co.paths, _, co.to, err = c.store.diffTreesBatch(was, commit, nil); err != nil {
			return nil, errGitCheckout
		}
	}
	return co, nil
}

// plain returns errGitCheckout unless git's checkout would write nothing
// different: plain paths and modes only, no submodule, every attributes
// file before and after neutral, and (in a copy not trusted) every
// directory the index has files in still one: a link there would have the
// stat data of plan read through it.
func (co *copyCheckout) plain() error {
	var attributes []string // the blobs of every attributes file, before and after
	for _, p := range co.paths {
		e, ok := co.to[p]
		if !plainPath(p) || (ok && e.mode != "100644" && e.mode != "100755" && e.mode != "120000") {
			return errGitCheckout
		}
		if ok && isAttributes(p) {
			attributes = append(attributes, e.blob)
		}
	}
	dirs := map[string]bool{}
	for _, e := range co.saved {
		if !plainPath(e.Path) || e.Stat[6] == 0o160000 {
			return errGitCheckout
		}
		if isAttributes(e.Path) {
			attributes = append(attributes, hex.EncodeToString(e.OID))
		}
		if co.trusted {
			continue // planagent wrote its directories
		}
		for d := parentOf(e.Path); d != "" && !dirs[d]; d = parentOf(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		fi, err := os.Lstat(filepath.Join(co.dir, filepath.FromSlash(d)))
		if err == nil && !fi.IsDir() {
			return errGitCheckout
		}
	}
	if !co.c.neutralBlobs(attributes) {
		return errGitCheckout
	}
	return nil
}

// plan chooses what is written: the paths that change, and (in a copy not
// trusted) the tracked files that are no longer as the saved index says.
func (co *copyCheckout) plan() {
	co.write = map[string]entry{}
	changing := make(map[string]bool, len(co.paths))
	for _, p := range co.paths {
		changing[p] = true
		if e, ok := co.to[p]; ok {
			co.write[p] = e
		}
	}
	co.index = make(map[string]gitindex.Entry, len(co.saved))
	for _, e := range co.saved {
		if changing[e.Path] {
			continue
		}
		co.index[e.Path] = e
		if co.trusted {
			continue
		}
		fi, err := os.Lstat(filepath.Join(co.dir, filepath.FromSlash(e.Path)))
		if err == nil {
			if st, ok := gitindex.StatData(fi); ok && st == e.Stat && !gitindex.Racy(e.Stat, co.savedAt) {
				continue
			}
		}
		co.write[e.Path] = entry{mode: treeMode(e.Stat[6]), blob: hex.EncodeToString(e.OID)}
	}
}

// removeGone removes the files commit no longer has, before any write (a
// file can become a directory). A directory there is not tracked:
// cleanCopy removes it, or, in a trusted copy, the removal of the files
// below it, which removes the directories it empties here.
func (co *copyCheckout) removeGone() error {
	for _, p := range co.paths {
		if _, ok := co.to[p]; ok {
			continue
		}
		if !dirsOnTheWay(co.dir, p) {
			continue // gone with its directory, or under a link: never followed
		}
		full := filepath.Join(co.dir, filepath.FromSlash(p))
		if fi, err := os.Lstat(full); err == nil && !fi.IsDir() {
			if err := os.Remove(full); err != nil {
				return err
			}
		}
		if co.trusted {
			for d := parentOf(p); d != ""; d = parentOf(d) {
				if os.Remove(filepath.Join(co.dir, filepath.FromSlash(d))) != nil {
					break // not empty
				}
			}
		}
	}
	return nil
}

// writeFiles writes the files plan chose, in path order, and takes their
// stat data into the index.
func (co *copyCheckout) writeFiles() error {
	order := make([]string, 0, len(co.write))
	for p := range co.write {
		order = append(order, p)
	}
	sort.Strings(order)
	for _, p := range order {
		e := co.write[p]
		st, err := co.c.writeCopyEntry(co.dir, p, e)
		if err != nil {
			return err
		}
		oid, err := hex.DecodeString(e.blob)
		if err != nil {
			return err
		}
		co.index[p] = gitindex.Entry{Stat: st, OID: oid, Path: p}
	}
	return nil
}

// finish writes the copy's index and a detached HEAD at commit, as git's
// checkout would leave them.
func (co *copyCheckout) finish() error {
	next := make([]gitindex.Entry, 0, len(co.index))
	for _, e := range co.index {
		next = append(next, e)
	}
	sort.Slice(next, func(i, j int) bool { return next[i].Path < next[j].Path })
	gd := filepath.Join(co.dir, ".git")
	if err := writeCopyFile(filepath.Join(gd, "index"), gitindex.Encode(next, objectHash(co.c.objectFormat))); err != nil {
		return err
	}
	return writeCopyFile(filepath.Join(gd, "HEAD"), []byte(co.commit+"\n"))
}

// plainCheckout reports whether the copies' checkout is done here: git's
// own would write nothing different (no attributes file of the user's,
// links and exec bits kept, case kept).
func (c *copyMaker) plainCheckout(ctx context.Context) bool {
	// A config that could not be read: git's checkout, whose copy fails
	// on the same error (copy.go).
	if u, err := c.user.get(ctx); c.userAttributes || err != nil || u.converts {
		return false
	}
	c.initMu.Lock()
	config := c.copyConfig
	c.initMu.Unlock()
	if config == nil {
		return false
	}
	for _, odd := range []string{"symlinks = false", "filemode = false", "ignorecase = true", "precomposeunicode = true"} {
		if bytes.Contains(config, []byte(odd)) {
			return false
		}
	}
	return true
}

// userAttributesFile reports whether git would read an attributes file of
// the user's in a copy: the default one (core.attributesFile is read from
// no config there).
func userAttributesFile() bool {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(home, ".config")
	}
	_, err := os.Stat(filepath.Join(dir, "git", "attributes"))
	return err == nil
}

// processUmask is the process's umask, which a new file's permissions are
// cut by (read, not set: setting it would race other goroutines' files).
func processUmask() os.FileMode {
	data, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
}

// dirsOnTheWay reports whether every directory above rel in the copy at
// dir is a real directory (no link, nothing missing).
func dirsOnTheWay(dir, rel string) bool {
	p := dir
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// writeCopyEntry writes the file rel of a tree, entry e, into the copy at
// dir, as git's checkout would leave it (mode 100644, 100755 or 120000; a
// new file gets the permissions the umask leaves), and returns its stat
// data. The blob streams into the file, never held whole. No link is
// followed: a directory on the way that is not one is replaced by one,
// and a single regular file already there is rewritten in place.
func (c *copyMaker) writeCopyEntry(dir, rel string, e entry) ([10]uint32, error) {
	mode, umask := e.mode, c.umask
	parts := strings.Split(rel, "/")
	p := dir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			if err := os.Remove(p); err != nil {
				return [10]uint32{}, err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return [10]uint32{}, err
		}
		if err := os.Mkdir(p, 0o777); err != nil {
			return [10]uint32{}, err
		}
	}
	full := filepath.Join(dir, filepath.FromSlash(rel))
	perm := 0o666 &^ umask
	if mode == "100755" {
		perm = 0o777 &^ umask
	}
	written := false
	if fi, err := os.Lstat(full); err == nil {
		switch {
		case fi.IsDir():
			// Holding files: git would remove them; left to git.
			if err := os.Remove(full); err != nil {
				return [10]uint32{}, errGitCheckout
			}
		case mode != "120000" && singleFile(full) && fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) == 0:
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				return [10]uint32{}, err
			}
			werr := c.cat.blobTo(e.blob, -1, f)
			cerr := f.Close()
			if err := errors.Join(werr, cerr); err != nil {
				return [10]uint32{}, err
			}
			if fi.Mode().Perm() != perm {
				if err := os.Chmod(full, perm); err != nil {
					return [10]uint32{}, err
				}
			}
			written = true
		default:
			if err := os.Remove(full); err != nil {
				return [10]uint32{}, err
			}
		}
	}
	if !written {
		if mode == "120000" {
			target, err := c.cat.blobBytes(e.blob, maxLinkTarget)
			if err != nil {
				return [10]uint32{}, err
			}
			if err := os.Symlink(string(target), full); err != nil {
				return [10]uint32{}, err
			}
		} else {
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
			if err != nil {
				return [10]uint32{}, err
			}
			werr := c.cat.blobTo(e.blob, -1, f)
			if err := errors.Join(werr, f.Close()); err != nil {
				return [10]uint32{}, err
			}
		}
	}
	fi, err := os.Lstat(full)
	if err != nil {
		return [10]uint32{}, err
	}
	st, ok := gitindex.StatData(fi)
	if !ok {
		return [10]uint32{}, fmt.Errorf("%s is not a file after its write", rel)
	}
	return st, nil
}
