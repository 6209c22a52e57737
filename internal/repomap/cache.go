package repomap

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// The cache is one file per root in a compact binary format of varints and
// length-prefixed strings. It is read into a single string and every cached
// string is a substring of it, so loading it allocates little more than the
// Symbol slices (gob would allocate every string separately, and a warm map
// of a large tree is meant to take well under 100 ms). References, needed
// only when ranking again, stay encoded until then.

const (
	cacheMagic = "RMAP"
	// cacheVersion changes whenever the format or an extractor's output
	// changes, so an old cache is rebuilt rather than trusted.
	cacheVersion = 1
)

var kindCodes = []string{KindType, KindFunc, KindMethod, KindConst, KindVar, KindModule, KindMacro, KindImpl}

// cacheData is a decoded cache file.
type cacheData struct {
	root    string
	rankKey string // boost key the stored ranks were computed for
	gomods  []fileStat
	files   map[string]*fileData
}

// cachePath is the cache file of root inside dir: one per root, so one cache
// dir can serve several workspaces.
func cachePath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "repomap-"+hex.EncodeToString(sum[:8])+".bin")
}

type encoder struct {
	buf []byte
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) float(f float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(f))
}
func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}
func (e *encoder) strs(ss []string) {
	e.uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func encodeRefs(refs []identCount) string {
	e := encoder{buf: make([]byte, 0, len(refs)*10)}
	e.uvarint(uint64(len(refs)))
	for _, r := range refs {
		e.str(r.name)
		e.uvarint(uint64(r.n))
	}
	return string(e.buf)
}

// saveCache writes the cache atomically (temp file + rename), so a reader
// never sees half a file and concurrent writers only race on which
// complete file wins.
func saveCache(file, root, rankKey string, gomods []fileStat, files []*fileData) error {
	e := encoder{buf: make([]byte, 0, 1<<20)}
	e.buf = append(e.buf, cacheMagic...)
	e.uvarint(cacheVersion)
	e.str(root)
	e.str(rankKey)
	e.uvarint(uint64(len(gomods)))
	for _, m := range gomods {
		e.str(m.rel)
		e.varint(m.mtime)
		e.varint(m.size)
	}
	e.uvarint(uint64(len(files)))
	for _, f := range files {
		e.str(f.rel)
		e.str(f.lang)
		e.varint(f.mtime)
		e.varint(f.size)
		flags := byte(0)
		if f.skip {
			flags = 1
		}
		e.buf = append(e.buf, flags)
		e.float(f.rank)
		e.uvarint(uint64(len(f.syms)))
		for _, s := range f.syms {
			e.buf = append(e.buf, kindCode(s.Kind))
			e.str(s.Name)
			e.str(s.Signature)
			e.str(s.Doc)
			e.uvarint(uint64(s.StartLine))
			e.uvarint(uint64(s.EndLine))
			e.float(s.Rank)
		}
		e.strs(f.rawImports)
		e.strs(f.imports)
		if f.refsBlob == "" {
			f.refsBlob = encodeRefs(f.refs)
		}
		e.str(f.refsBlob)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("create repo map cache dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".repomap-*.tmp")
	if err != nil {
		return fmt.Errorf("write repo map cache: %w", err)
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	_, werr := w.Write(e.buf)
	if werr == nil {
		werr = w.Flush()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write repo map cache %s: %w", file, werr)
	}
	return nil
}

func kindCode(kind string) byte {
	for i, k := range kindCodes {
		if k == kind {
			return byte(i)
		}
	}
	return 0
}

// errCorrupt means the cache file could not be decoded; it is rebuilt.
var errCorrupt = errors.New("repo map cache is corrupt or from another version; rebuilding it")

type decoder struct {
	s   string
	pos int
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	// Decoded by hand from the string: binary.Uvarint needs a []byte.
	var x uint64
	var shift uint
	for range binary.MaxVarintLen64 {
		if d.pos >= len(d.s) {
			break
		}
		b := d.s[d.pos]
		d.pos++
		if b < 0x80 {
			return x | uint64(b)<<shift
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	d.err = errCorrupt
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.pos) { // every element takes at least one byte
		d.err = errCorrupt
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := d.s[d.pos : d.pos+n]
	d.pos += n
	return s
}

func (d *decoder) strs() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) byte1() byte {
	if d.err != nil || d.pos >= len(d.s) {
		d.err = errCorrupt
		return 0
	}
	d.pos++
	return d.s[d.pos-1]
}

func (d *decoder) float() float64 {
	if d.err != nil || d.pos+8 > len(d.s) {
		d.err = errCorrupt
		return 0
	}
	var bits uint64
	for i := 7; i >= 0; i-- {
		bits = bits<<8 | uint64(d.s[d.pos+i])
	}
	d.pos += 8
	return math.Float64frombits(bits)
}

// loadCache reads the cache of root. A missing file is (nil, nil); a corrupt
// or foreign one is an error the caller reports as a warning.
func loadCache(file, root string) (*cacheData, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read repo map cache: %w", err)
	}
	d := &decoder{s: string(data)}
	if len(d.s) < len(cacheMagic) || d.s[:len(cacheMagic)] != cacheMagic {
		return nil, fmt.Errorf("%s: %w", file, errCorrupt)
	}
	d.pos = len(cacheMagic)
	if d.uvarint() != cacheVersion || d.str() != root {
		return nil, nil // another version or root: start afresh, nothing to warn about
	}
	c := &cacheData{root: root, rankKey: d.str()}
	c.gomods = make([]fileStat, d.count())
	for i := range c.gomods {
		c.gomods[i] = fileStat{rel: d.str(), mtime: d.varint(), size: d.varint()}
	}
	n := d.count()
	c.files = make(map[string]*fileData, n)
	for range n {
		f := &fileData{}
		f.rel, f.lang, f.mtime, f.size = d.str(), d.str(), d.varint(), d.varint()
		f.skip = d.byte1() == 1
		f.rank = d.float()
		if ns := d.count(); ns > 0 {
			f.syms = make([]Symbol, ns)
			for si := range f.syms {
				s := &f.syms[si]
				k := d.byte1()
				if int(k) >= len(kindCodes) {
					d.err = errCorrupt
				} else {
					s.Kind = kindCodes[k]
				}
				s.Name, s.Signature, s.Doc = d.str(), d.str(), d.str()
				s.StartLine, s.EndLine = int(d.uvarint()), int(d.uvarint())
				s.Rank = d.float()
			}
		}
		f.rawImports, f.imports = d.strs(), d.strs()
		f.refsBlob = d.str()
		if d.err != nil {
			return nil, fmt.Errorf("%s: %w", file, d.err)
		}
		c.files[f.rel] = f
	}
	if d.err != nil {
		return nil, fmt.Errorf("%s: %w", file, d.err)
	}
	return c, nil
}

// decodeRefs expands a file's encoded references.
func decodeRefs(blob string) ([]identCount, error) {
	d := &decoder{s: blob}
	out := make([]identCount, d.count())
	for i := range out {
		out[i] = identCount{name: d.str(), n: int32(d.uvarint())}
	}
	return out, d.err
}
