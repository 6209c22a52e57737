package checkpoint

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git's object and pack checksums, not a security use
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A squash's new objects reach the object cache as one pack written here,
// from the loose objects git left in the squash's quarantine: a
// `git pack-objects` of the commit would walk the history the cache
// already holds to find the same few objects, and cost a process.

// looseObject is an object as git stores it loose: its id, and its type
// and content.
type looseObject struct {
	id   []byte
	typ  int // the pack's type number: 1 commit, 2 tree, 3 blob, 4 tag
	data []byte
}

var packTypes = map[string]int{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// maxCachedObject is the largest object a squash or a merge puts into the
// object cache itself (readLoose holds each whole, and the cache's small
// packs stay in memory until merged): a commit with a larger one is
// packed into the cache by git (pack-objects streams) when a copy of it
// is made.
const maxCachedObject = 1 << 20

// errObjectTooLarge is a loose object above maxCachedObject.
var errObjectTooLarge = errors.New("object too large to be read whole")

// readLoose reads the loose objects among files (paths relative to the
// objects directory dir, as listFiles gives them); errObjectTooLarge, once
// one of them is larger than maxCachedObject, told by its header alone.
func readLoose(dir string, files []string, hexLen int) ([]looseObject, error) {
	var objs []looseObject
	for _, rel := range files {
		fan, name, ok := strings.Cut(filepath.ToSlash(rel), "/")
		if !ok || len(fan) != 2 || len(fan)+len(name) != hexLen {
			continue // a pack, git's tmp_obj_ files
		}
		id, err := hex.DecodeString(fan + name)
		if err != nil {
			continue
		}
		o, err := readLooseFile(filepath.Join(dir, rel))
		if err != nil {
			return nil, fmt.Errorf("loose object %s: %w", fan+name, err)
		}
		o.id = id
		objs = append(objs, o)
	}
	return objs, nil
}

// listFiles lists the files under the objects directory dir (relative
// paths), leaving out the index and info/ a quarantine also has.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "index" && !strings.HasPrefix(rel, "info"+string(filepath.Separator)) {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// readLooseFile reads the loose object file p, refusing one whose header
// says it is larger than maxCachedObject (errObjectTooLarge) before
// reading more.
func readLooseFile(p string) (looseObject, error) {
	f, err := os.Open(p)
	if err != nil {
		return looseObject{}, err
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return looseObject{}, err
	}
	br := bufio.NewReader(z)
	head, err := br.ReadString(0)
	if err != nil || len(head) > 32 {
		return looseObject{}, fmt.Errorf("not a git object")
	}
	typ, sizeText, ok := strings.Cut(strings.TrimSuffix(head, "\x00"), " ")
	size, serr := strconv.ParseInt(sizeText, 10, 64)
	if !ok || serr != nil || size < 0 || packTypes[typ] == 0 {
		return looseObject{}, fmt.Errorf("not a git object")
	}
	if size > maxCachedObject {
		return looseObject{}, errObjectTooLarge
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(br, data); err != nil {
		return looseObject{}, fmt.Errorf("not a git object: %w", err)
	}
	if n, _ := br.Read(make([]byte, 1)); n != 0 {
		return looseObject{}, fmt.Errorf("not a git object: longer than its header says")
	}
	return looseObject{typ: packTypes[typ], data: data}, nil
}

// objectHash is the repository's hash: of object ids and of pack and
// index checksums.
func objectHash(objectFormat string) hash.Hash {
	if objectFormat == "sha256" {
		return sha256.New()
	}
	return sha1.New() //nolint:gosec // git's object ids, not a security use
}

// writePack writes objs as a pack and its index (version 2) into the pack
// directory dir, under temporary names renamed into place, the index
// last (git uses a pack once its index is there), and returns the pack's
// name and its entries. The checksums use the repository's hash (sha1 or
// sha256).
func writePack(dir, objectFormat string, objs []looseObject) (string, []packEntry, error) {
	entries, err := packEntries(objs)
	if err != nil {
		return "", nil, err
	}
	name, pack, idx, err := assemblePack(objectFormat, entries)
	if err != nil {
		return "", nil, err
	}
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".pack", pack}, {".idx", idx}} {
		tmp := filepath.Join(dir, "tmp_"+name+f.ext)
		if err := os.WriteFile(tmp, f.data, 0o444); err != nil {
			return "", nil, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name+f.ext)); err != nil {
			_ = os.Remove(tmp)
			return "", nil, err
		}
	}
	return name, entries, nil
}

// packEntry is one object as a pack holds it: its id, and its entry (the
// type and size header, the compressed content) with the entry's CRC. An
// entry does not depend on where in a pack it lies, so packs of the same
// objects are put together without compressing anything again.
type packEntry struct {
	id    []byte
	entry []byte
	crc   uint32
}

// packEntries compresses objs into pack entries.
func packEntries(objs []looseObject) ([]packEntry, error) {
	out := make([]packEntry, 0, len(objs))
	var b bytes.Buffer
	// As loose objects are (writeLoose): these packs are the object
	// cache's and its copies', written on every squash.
	z, err := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		b.Reset()
		size := len(o.data)
		h := byte(o.typ<<4) | byte(size&15)
		size >>= 4
		for size > 0 {
			b.WriteByte(h | 0x80)
			h = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(h)
		z.Reset(&b)
		if _, err := z.Write(o.data); err != nil {
			return nil, err
		}
		if err := z.Close(); err != nil {
			return nil, err
		}
		e := bytes.Clone(b.Bytes())
		out = append(out, packEntry{id: o.id, entry: e, crc: crc32.ChecksumIEEE(e)})
	}
	return out, nil
}

// assemblePack is a pack of entries (each object once, in id order) and
// its index, and the pack's name: the same objects give the same bytes.
func assemblePack(objectFormat string, entries []packEntry) (name string, packData, idxData []byte, err error) {
	entries = slices.Clone(entries)
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].id, entries[j].id) < 0 })
	entries = slices.CompactFunc(entries, func(a, b packEntry) bool { return bytes.Equal(a.id, b.id) })
	var pack bytes.Buffer
	pack.WriteString("PACK")
	_ = binary.Write(&pack, binary.BigEndian, [2]uint32{2, uint32(len(entries))})
	offsets := make([]uint32, len(entries))
	crcs := make([]uint32, len(entries))
	for i, e := range entries {
		if pack.Len()+len(e.entry) >= 1<<31 {
			return "", nil, nil, fmt.Errorf("a pack's objects pass 2 GiB")
		}
		offsets[i] = uint32(pack.Len())
		crcs[i] = e.crc
		pack.Write(e.entry)
	}
	h := objectHash(objectFormat)
	h.Write(pack.Bytes())
	sum := h.Sum(nil)
	pack.Write(sum)

	var idx bytes.Buffer
	idx.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fan [256]uint32
	for _, e := range entries {
		fan[e.id[0]]++
	}
	for i := 1; i < 256; i++ {
		fan[i] += fan[i-1]
	}
	_ = binary.Write(&idx, binary.BigEndian, fan)
	for _, e := range entries {
		idx.Write(e.id)
	}
	_ = binary.Write(&idx, binary.BigEndian, crcs)
	_ = binary.Write(&idx, binary.BigEndian, offsets)
	idx.Write(sum)
	ih := objectHash(objectFormat)
	ih.Write(idx.Bytes())
	idx.Write(ih.Sum(nil))

	return "pack-" + hex.EncodeToString(sum), pack.Bytes(), idx.Bytes(), nil
}
