// Package gitindex reads and writes git's index file (.git/index), the one
// place its format is kept: the checkpoints check copies out and clean
// them with it, and the repo map takes the object ids it vouches for as a
// file's content identity.
//
// Versions 2 and 3 are read (version 3 adds extended flags); version 4
// compresses its paths and is refused with ErrVersion. An index with an
// extension git marks as one a reader must understand (a signature not
// starting with an uppercase letter: the split index's "link", the sparse
// index's "sdir") is refused with an ExtensionError: its entries are not
// all there, or not all files. Callers fall back to git, or to reading
// the files.
package gitindex

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's checksums, not a security use
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"syscall"
)

// ErrVersion is an index whose version is not read here (version 4).
var ErrVersion = errors.New("index version not read here")

// ExtensionError is an index with an extension a reader must understand
// and this one does not (the split index's "link", the sparse index's
// "sdir").
type ExtensionError struct{ Signature string }

func (e *ExtensionError) Error() string {
	return fmt.Sprintf("index extension %q (split or sparse index) not read here", e.Signature)
}

// errFormat is an index cut short or otherwise not one git wrote.
var errFormat = errors.New("not a git index")

// Flag bits of an entry (ce_flags in git).
const (
	FlagExtended = 0x4000 // version 3: two more bytes of flags follow
	FlagStage    = 0x3000 // the merge stage, 0 outside a conflict
)

// Entry is one entry of an index.
type Entry struct {
	// Stat is the file's stat data as git keeps it, 32 bits each: ctime
	// s, ns; mtime s, ns; dev, ino, mode, uid, gid, size.
	Stat  [10]uint32
	OID   []byte
	Flags uint16
	Path  string
}

// Read reads the entries of the index file p, whose object ids are idLen
// bytes long (20 for sha1, 32 for sha256), and the time it was written.
func Read(p string, idLen int) ([]Entry, syscall.Timespec, error) {
	data, mtime, err := readFile(p)
	if err != nil {
		return nil, mtime, err
	}
	entries, err := parse(data, idLen)
	return entries, mtime, err
}

// ReadAny reads the index file p of a repository of either object format,
// told apart by the checksum that ends the file, and returns the id
// length too. An index without a checksum (index.skipHash) is refused.
func ReadAny(p string) ([]Entry, syscall.Timespec, int, error) {
	data, mtime, err := readFile(p)
	if err != nil {
		return nil, mtime, 0, err
	}
	for _, h := range []hash.Hash{sha1.New(), sha256.New()} { //nolint:gosec // git's checksums
		n := h.Size()
		if len(data) < 12+n {
			continue
		}
		h.Write(data[:len(data)-n])
		if bytes.Equal(h.Sum(nil), data[len(data)-n:]) {
			entries, err := parse(data, n)
			return entries, mtime, n, err
		}
	}
	return nil, mtime, 0, fmt.Errorf("%s: no checksum of either object format: %w", p, errFormat)
}

func readFile(p string) ([]byte, syscall.Timespec, error) {
	var mtime syscall.Timespec
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, mtime, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, mtime, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, mtime, fmt.Errorf("%s: no stat data on this system", p)
	}
	_, mtime = StatTimes(st)
	return data, mtime, nil
}

func parse(data []byte, idLen int) ([]Entry, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errFormat
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v != 2 && v != 3 {
		if v == 4 {
			return nil, ErrVersion
		}
		return nil, fmt.Errorf("index version %d: %w", v, errFormat)
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	entries := make([]Entry, 0, min(n, len(data)/62))
	off := 12
	for range n {
		start := off
		if off+40+idLen+2 > len(data) {
			return nil, fmt.Errorf("entries cut short: %w", errFormat)
		}
		var e Entry
		for i := range e.Stat {
			e.Stat[i] = binary.BigEndian.Uint32(data[off+4*i:])
		}
		off += 40
		e.OID = data[off : off+idLen]
		off += idLen
		e.Flags = binary.BigEndian.Uint16(data[off:])
		off += 2
		if e.Flags&FlagExtended != 0 {
			off += 2
		}
		end := bytes.IndexByte(data[min(off, len(data)):], 0)
		if end < 0 {
			return nil, fmt.Errorf("a path not terminated: %w", errFormat)
		}
		e.Path = string(data[off : off+end])
		entries = append(entries, e)
		// Entries are padded with NULs to a multiple of eight bytes.
		off = start + (off-start+end+8)&^7
	}
	// Extensions follow, then the checksum: an optional one (its
	// signature starts with 'A'..'Z') may be skipped, no other.
	for off+8 <= len(data)-idLen {
		sig := data[off : off+4]
		if sig[0] < 'A' || sig[0] > 'Z' {
			return nil, &ExtensionError{Signature: string(sig)}
		}
		off += 8 + int(binary.BigEndian.Uint32(data[off+4:]))
	}
	return entries, nil
}

// Encode is an index file (version 2, no extensions) of entries, sorted
// by path and without extended flags, ending in its checksum by h (the
// repository's hash).
func Encode(entries []Entry, h hash.Hash) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, uint32(len(entries))}) //nolint:gosec // an index's count
	for _, e := range entries {
		_ = binary.Write(&b, binary.BigEndian, e.Stat)
		b.Write(e.OID)
		_ = binary.Write(&b, binary.BigEndian, uint16(min(len(e.Path), 0xfff)))
		b.WriteString(e.Path)
		n := 40 + len(e.OID) + 2 + len(e.Path)
		b.Write(make([]byte, 8-n%8)) // one to eight NULs
	}
	h.Write(b.Bytes())
	return h.Sum(b.Bytes())
}

// StatData is fi's stat data as git's index keeps it, the mode as git
// records a file of that kind; false for what an index holds no stat
// data of (a directory, a device).
func StatData(fi fs.FileInfo) ([10]uint32, bool) {
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
	ctime, mtime := StatTimes(st)
	return [10]uint32{
		uint32(ctime.Sec), uint32(ctime.Nsec), uint32(mtime.Sec), uint32(mtime.Nsec), //nolint:gosec // git keeps 32 bits
		uint32(st.Dev), uint32(st.Ino), mode, st.Uid, st.Gid, uint32(st.Size), //nolint:gosec // git keeps 32 bits
	}, true
}

// Racy reports whether an entry's file was modified no earlier than its
// index was written: its stat data cannot tell a later change within the
// same tick, so git compares such a file's content, and so must a caller.
func Racy(stat [10]uint32, index syscall.Timespec) bool {
	s, ns := int64(stat[2]), int64(stat[3])
	return s > index.Sec || (s == index.Sec && ns >= index.Nsec)
}
