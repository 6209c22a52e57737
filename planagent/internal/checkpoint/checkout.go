package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
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
)

// A recycled copy is brought from the commit it was made at to the next
// one here rather than by `git checkout`, when nothing about it is unusual.
// The index saved when it was made says what each tracked file was (its
// stat data), the two trees' difference says what changes, and only the
// files that differ from either are written: in place where a single
// regular file is there, since on a virtual disk a new file (a new inode)
// costs ten times a rewrite. The index and HEAD are then rewritten as git
// would leave them. Whatever git would do differently is left to git
// (errGitCheckout): a .gitattributes anywhere (end-of-line and encoding
// conversions), a submodule, an attributes file of the user's, a file
// system without links or exec bits, an index this does not read, a
// tracked directory the agent made into something else.

var errGitCheckout = errors.New("left to git checkout")

// indexEntry is one entry of a git index (version 2, stage 0).
type indexEntry struct {
	// ctime s, ns; mtime s, ns; dev, ino, mode, uid, gid, size: as git
	// keeps them (32 bits each).
	stat [10]uint32
	oid  []byte
	path string
}

// readIndex reads the entries of the index file p and its modification
// time, refusing (errGitCheckout) what a plain checkout never writes:
// version 4, extended flags, a stage other than 0.
func readIndex(p string, idLen int) ([]indexEntry, syscall.Timespec, error) {
	var mtime syscall.Timespec
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, mtime, errGitCheckout
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, mtime, errGitCheckout
	}
	_, mtime = statTimes(fi.Sys().(*syscall.Stat_t))
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, mtime, errGitCheckout
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v != 2 && v != 3 {
		return nil, mtime, errGitCheckout
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	entries := make([]indexEntry, 0, n)
	off := 12
	for range n {
		start := off
		if off+40+idLen+2 > len(data) {
			return nil, mtime, errGitCheckout
		}
		var e indexEntry
		for i := range e.stat {
			e.stat[i] = binary.BigEndian.Uint32(data[off+4*i:])
		}
		off += 40
		e.oid = data[off : off+idLen]
		off += idLen
		flags := binary.BigEndian.Uint16(data[off:])
		off += 2
		if flags&0x7000 != 0 { // extended flags, or a stage
			return nil, mtime, errGitCheckout
		}
		end := bytes.IndexByte(data[off:], 0)
		if end < 0 {
			return nil, mtime, errGitCheckout
		}
		e.path = string(data[off : off+end])
		entries = append(entries, e)
		off = start + (off-start+end+8)&^7
	}
	return entries, mtime, nil
}

// encodeIndex is an index file (version 2, no extensions) of entries,
// sorted by path, with its checksum in the repository's hash.
func encodeIndex(entries []indexEntry, objectFormat string) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, uint32(len(entries))})
	for _, e := range entries {
		_ = binary.Write(&b, binary.BigEndian, e.stat)
		b.Write(e.oid)
		_ = binary.Write(&b, binary.BigEndian, uint16(min(len(e.path), 0xfff)))
		b.WriteString(e.path)
		n := 40 + len(e.oid) + 2 + len(e.path)
		b.Write(make([]byte, 8-n%8)) // one to eight NULs
	}
	h := objectHash(objectFormat)
	h.Write(b.Bytes())
	return h.Sum(b.Bytes())
}

// statData is fi's stat data as git's index keeps it, the mode as git
// records a file of that kind.
func statData(fi fs.FileInfo) ([10]uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [10]uint32{}, false
	}
	var mode uint32
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		mode = 0o120000
	case fi.Mode().IsRegular() && fi.Mode()&0o100 != 0:
		mode = 0o100755
	case fi.Mode().IsRegular():
		mode = 0o100644
	default:
		return [10]uint32{}, false
	}
	ctime, mtime := statTimes(st)
	return [10]uint32{
		uint32(ctime.Sec), uint32(ctime.Nsec), uint32(mtime.Sec), uint32(mtime.Nsec),
		uint32(st.Dev), uint32(st.Ino), mode, st.Uid, st.Gid, uint32(st.Size), //nolint:gosec // git keeps 32 bits
	}, true
}

// racy reports whether an entry's file was modified no earlier than its
// index was written: its stat data cannot tell a later change (git
// compares such a file's content; here it is written again).
func racy(stat [10]uint32, index syscall.Timespec) bool {
	s, ns := int64(stat[2]), int64(stat[3])
	return s > index.Sec || (s == index.Sec && ns >= index.Nsec)
}

// treeMode is an index mode as a tree's mode string.
func treeMode(m uint32) string { return strconv.FormatUint(uint64(m), 8) }

// plainPath reports whether every component of p is one git checks out.
func plainPath(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

func isAttributes(p string) bool {
	return p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes")
}

// checkoutCopy brings the copy at dir, made at was (the index saved then
// says what it held), to commit: its files, index and HEAD. It returns
// errGitCheckout when git must do it; an error may leave the copy half
// made (the caller then checks it out with git, from the saved index).
// A trusted copy's files are taken to be as its saved index says: only
// the paths that differ between the two commits are looked at, and the
// directories their removal empties are removed (no clean follows).
func (r *Repo) checkoutCopy(ctx context.Context, dir, was, commit string, trusted bool) error {
	if was == "" || !r.plainCheckout() {
		return errGitCheckout
	}
	idLen := 20
	if r.objectFormat == "sha256" {
		idLen = 32
	}
	entries, indexTime, err := readIndex(filepath.Join(r.stateDir(dir), "index"), idLen)
	if err != nil {
		return err
	}
	var paths []string
	to := map[string]entry{}
	if was != commit {
		if paths, _, to, err = r.diffTreesBatch(was, commit); err != nil {
			return errGitCheckout
		}
	}
	changing := make(map[string]bool, len(paths))
	for _, p := range paths {
		e, ok := to[p]
		if !plainPath(p) || isAttributes(p) || (ok && e.mode != "100644" && e.mode != "100755" && e.mode != "120000") {
			return errGitCheckout
		}
		changing[p] = true
	}
	// Every directory the index has files in must still be one: a link
	// there would have the stat data below read through it.
	// (A trusted copy's are: planagent wrote them.)
	dirs := map[string]bool{}
	for _, e := range entries {
		if !plainPath(e.path) || isAttributes(e.path) || e.stat[6] == 0o160000 {
			return errGitCheckout
		}
		if trusted {
			continue
		}
		for d := parentOf(e.path); d != "" && !dirs[d]; d = parentOf(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d)))
		if err == nil && !fi.IsDir() {
			return errGitCheckout
		}
	}
	// What is written: the paths that change, and the tracked files that
	// are no longer as the index says.
	write := map[string]entry{}
	for _, p := range paths {
		if e, ok := to[p]; ok {
			write[p] = e
		}
	}
	kept := make(map[string]indexEntry, len(entries))
	for _, e := range entries {
		if changing[e.path] {
			continue
		}
		kept[e.path] = e
		if trusted {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.path)))
		if err == nil {
			if st, ok := statData(fi); ok && st == e.stat && !racy(e.stat, indexTime) {
				continue
			}
		}
		write[e.path] = entry{mode: treeMode(e.stat[6]), blob: hex.EncodeToString(e.oid)}
	}
	ids := make([]string, 0, len(write))
	for _, e := range write {
		ids = append(ids, e.blob)
	}
	contents, err := r.blobs(ctx, ids)
	if err != nil {
		return errGitCheckout
	}
	// Removals first (a file can become a directory), then the writes.
	for _, p := range paths {
		if _, ok := to[p]; ok {
			continue
		}
		if !dirsOnTheWay(dir, p) {
			continue // gone with its directory, or under a link: never followed
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if fi, err := os.Lstat(full); err == nil && !fi.IsDir() {
			if err := os.Remove(full); err != nil {
				return err
			}
		}
		// A directory there is not tracked: cleanCopy removes it, or,
		// in a trusted copy, the removal of the files below it.
		if trusted {
			for d := parentOf(p); d != ""; d = parentOf(d) {
				if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
					break // not empty
				}
			}
		}
	}
	order := make([]string, 0, len(write))
	for p := range write {
		order = append(order, p)
	}
	sort.Strings(order)
	for _, p := range order {
		e := write[p]
		st, err := writeCopyEntry(dir, p, e.mode, contents[e.blob], r.umask)
		if err != nil {
			return err
		}
		oid, err := hex.DecodeString(e.blob)
		if err != nil {
			return err
		}
		kept[p] = indexEntry{stat: st, oid: oid, path: p}
	}
	next := make([]indexEntry, 0, len(kept))
	for _, e := range kept {
		next = append(next, e)
	}
	sort.Slice(next, func(i, j int) bool { return next[i].path < next[j].path })
	gd := filepath.Join(dir, ".git")
	if err := writeCopyFile(filepath.Join(gd, "index"), encodeIndex(next, r.objectFormat)); err != nil {
		return err
	}
	return writeCopyFile(filepath.Join(gd, "HEAD"), []byte(commit+"\n"))
}

// plainCheckout reports whether the copies' checkout is done here: git's
// own would write nothing different (no attributes file of the user's,
// links and exec bits kept, case kept).
func (r *Repo) plainCheckout() bool {
	if r.userAttributes {
		return false
	}
	r.initMu.Lock()
	config := r.copyConfig
	r.initMu.Unlock()
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

// writeCopyEntry writes the file rel of a tree into the copy at dir, as
// git's checkout would leave it (mode 100644, 100755 or 120000; a new file
// gets the permissions umask leaves), and returns its stat data. No link
// is followed: a directory on the way that is not one is replaced by one,
// and a single regular file already there is rewritten in place.
func writeCopyEntry(dir, rel, mode string, content []byte, umask os.FileMode) ([10]uint32, error) {
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
			_, werr := f.Write(content)
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
			if err := os.Symlink(string(content), full); err != nil {
				return [10]uint32{}, err
			}
		} else {
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
			if err != nil {
				return [10]uint32{}, err
			}
			_, werr := f.Write(content)
			if err := errors.Join(werr, f.Close()); err != nil {
				return [10]uint32{}, err
			}
		}
	}
	fi, err := os.Lstat(full)
	if err != nil {
		return [10]uint32{}, err
	}
	st, ok := statData(fi)
	if !ok {
		return [10]uint32{}, fmt.Errorf("%s is not a file after its write", rel)
	}
	return st, nil
}

// indexTree writes the tree of the index idx, which git add made from the
// copy's saved index (saved, the base's, whose tree is baseTree), into the
// objects directory dir, and returns its id: what `git write-tree` would
// write, without the process. Only the paths whose entries differ are
// looked at, and only the trees above them written. news are the objects
// the new tree has that base's has not: the blobs of the entries that
// differ and the trees written. errGitCheckout when either index is one
// this does not read.
func (r *Repo) indexTree(dir, idx, saved, baseTree string) (tree string, news []string, err error) {
	idLen := 20
	if r.objectFormat == "sha256" {
		idLen = 32
	}
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
		case j == len(now) || (i < len(was) && was[i].path < now[j].path):
			set[was[i].path] = entry{}
			i++
		case i == len(was) || now[j].path < was[i].path:
			set[now[j].path] = entry{mode: treeMode(now[j].stat[6]), blob: hex.EncodeToString(now[j].oid)}
			j++
		default:
			if now[j].stat[6] != was[i].stat[6] || !bytes.Equal(now[j].oid, was[i].oid) {
				set[now[j].path] = entry{mode: treeMode(now[j].stat[6]), blob: hex.EncodeToString(now[j].oid)}
			}
			i++
			j++
		}
	}
	if len(set) == 0 {
		return baseTree, nil, nil
	}
	for p, e := range set {
		if !plainPath(p) || (e.blob != "" && e.mode != "100644" && e.mode != "100755" && e.mode != "120000" && e.mode != "160000") {
			return "", nil, errGitCheckout
		}
		if e.blob != "" && e.mode != "160000" {
			news = append(news, e.blob)
		}
	}
	tree, err = r.editTree(dir, baseTree, set, &news)
	return tree, news, err
}
