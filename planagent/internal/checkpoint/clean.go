package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// After its checkout a recycled copy holds, besides its commit's files,
// whatever the agent left that git does not track (`git clean -ffdx`
// would remove it). The index checkout just wrote says what is tracked;
// one walk removes the rest, without a git process. An index this does
// not read (version 4's compressed paths) falls back to git clean.

var errIndexVersion = errors.New("index version not read here")

// indexPaths reads the paths of a git index file (versions 2 and 3).
func indexPaths(p string, idLen int) ([]string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errors.New("not a git index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, errIndexVersion
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	paths := make([]string, 0, n)
	off := 12
	for range n {
		start := off
		off += 40 + idLen // stat data, object id
		if off+2 > len(data) {
			return nil, errors.New("index entries cut short")
		}
		flags := binary.BigEndian.Uint16(data[off : off+2])
		off += 2
		if flags&0x4000 != 0 { // extended flags (version 3)
			off += 2
		}
		end := bytes.IndexByte(data[off:], 0)
		if end < 0 {
			return nil, errors.New("index path not terminated")
		}
		paths = append(paths, string(data[off:off+end]))
		// Entries are padded with NULs to a multiple of eight bytes.
		off = start + (off-start+end+8)&^7
	}
	return paths, nil
}

// cleanCopy removes from the copy at dir everything its index does not
// track, as `git clean -ffdx` does; the copy's own .git stays.
func (r *Repo) cleanCopy(ctx context.Context, dir string) error {
	idLen := 20
	if r.objectFormat == "sha256" {
		idLen = 32
	}
	paths, err := indexPaths(filepath.Join(dir, ".git", "index"), idLen)
	if err != nil {
		c := git{dir: dir, gitDir: filepath.Join(dir, ".git"), workTree: dir, hardened: true}
		_, err := c.run(ctx, "clean", "-q", "-ffdx")
		return err
	}
	tracked := make(map[string]bool, len(paths))
	dirs := map[string]bool{}
	for _, p := range paths {
		tracked[p] = true
		for d := filepath.ToSlash(filepath.Dir(p)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if dirs[d] {
				break
			}
			dirs[d] = true
		}
	}
	return walkCopy(dir, func(p, rel string, d fs.DirEntry) (bool, error) {
		switch {
		case rel == ".git":
			return false, nil
		case tracked[rel]:
			return false, nil // a file, or a submodule's directory
		case d.IsDir() && dirs[rel]:
			return true, nil
		}
		return false, removeAll(p)
	})
}
