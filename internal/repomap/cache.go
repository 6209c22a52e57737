package repomap

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
)

// The cache is one file per root in a compact binary format of varints and
// length-prefixed strings. It is read into a single string and every cached
// string is a substring of it, so loading it allocates little more than the
// Symbol slices (gob would allocate every string separately, and a warm map
// of a large tree is meant to take well under 100 ms). References, needed
// only to rebuild the graph, and the graph, needed only for a boost, stay
// encoded until then. The stored ranks are the unboosted ones: a boost is
// applied to the graph per Build and never written back.

const (
	cacheMagic = "RMAP"
	// cacheVersion changes whenever the format or an extractor's output
	// changes, so an old cache is rebuilt rather than trusted.
	cacheVersion = 3
)

var kindCodes = []string{KindType, KindFunc, KindMethod, KindConst, KindVar, KindModule, KindMacro, KindImpl}

// cacheData is a decoded cache file.
type cacheData struct {
	root      string
	gomods    []fileStat
	files     map[string]*fileData
	graphBlob string // the encoded graph (see encodeGraph)
}

// CacheFiles are the cache files of key in dir (with and without tests),
// for a caller that hands a cache on to another process.
func CacheFiles(dir, key string) []string {
	return []string{cachePath(dir, key, false), cachePath(dir, key, true)}
}

// cachePath is the cache file of key (a root, or Options.CacheKey) inside
// dir: one per key, so one cache dir can serve several workspaces.
func cachePath(dir, key string, includeTests bool) string {
	if includeTests { // another file set: a separate cache, so the two do not evict each other
		key += "\x00tests"
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, "repomap-"+hex.EncodeToString(sum[:8])+".bin")
}

type encoder struct {
	buf []byte
	w   io.Writer // where flush writes buf; nil keeps it in memory
	err error     // the first write error
}

// flush writes the buffer out once it holds more than over bytes.
func (e *encoder) flush(over int) {
	if e.w == nil || len(e.buf) <= over {
		return
	}
	if e.err == nil {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
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
func saveCache(file, root string, gomods []fileStat, files []*fileData, g *graph) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("create repo map cache dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".repomap-*.tmp")
	if err != nil {
		return fmt.Errorf("write repo map cache: %w", err)
	}
	// Streamed in chunks: the whole file in one buffer would add its size
	// (tens of MB for a large tree) to the peak memory of a cold map.
	e := encoder{buf: make([]byte, 0, 1<<16), w: tmp}
	e.buf = append(e.buf, cacheMagic...)
	e.uvarint(cacheVersion)
	e.str(root)
	e.uvarint(uint64(len(gomods)))
	for _, m := range gomods {
		e.str(m.rel)
		e.varint(m.mtime)
		e.varint(m.size)
		e.str(m.oid)
	}
	e.uvarint(uint64(len(files)))
	for _, f := range files {
		e.str(f.rel)
		e.str(f.lang)
		e.varint(f.mtime)
		e.varint(f.size)
		e.str(f.oid)
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
		e.str(f.refsBlob)
		e.flush(1 << 15)
	}
	encodeGraph(&e, g) // last and unframed: the rest of the file
	e.flush(0)
	werr := e.err
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

// loadCache reads a cache file, which says which root it was written for.
// A missing file is (nil, nil); a corrupt or foreign one is an error the
// caller reports as a warning.
func loadCache(file string) (*cacheData, error) {
	data, err := readString(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read repo map cache: %w", err)
	}
	d := &decoder{s: data}
	if len(d.s) < len(cacheMagic) || d.s[:len(cacheMagic)] != cacheMagic {
		return nil, fmt.Errorf("%s: %w", file, errCorrupt)
	}
	d.pos = len(cacheMagic)
	if d.uvarint() != cacheVersion {
		return nil, nil // another version: start afresh, nothing to warn about
	}
	c := &cacheData{root: d.str()}
	c.gomods = make([]fileStat, d.count())
	for i := range c.gomods {
		c.gomods[i] = fileStat{rel: d.str(), mtime: d.varint(), size: d.varint(), oid: d.str()}
	}
	n := d.count()
	c.files = make(map[string]*fileData, n)
	for range n {
		f := &fileData{}
		f.rel, f.lang, f.mtime, f.size, f.oid = d.str(), d.str(), d.varint(), d.varint(), d.str()
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
	c.graphBlob = d.s[d.pos:]
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

// encodeGraph encodes g: names, then each identifier's definers, then each
// file's edges, then the symbols' identifiers (+1, so -1 is 0).
func encodeGraph(e *encoder, g *graph) {
	e.strs(g.names)
	for id := range g.names {
		d := g.definers(int32(id))
		e.uvarint(uint64(len(d)))
		for _, f := range d {
			e.uvarint(uint64(f))
		}
	}
	e.uvarint(uint64(len(g.edgeStart) - 1))
	for f := 0; f+1 < len(g.edgeStart); f++ {
		e.uvarint(uint64(g.edgeStart[f+1] - g.edgeStart[f]))
		for i := g.edgeStart[f]; i < g.edgeStart[f+1]; i++ {
			e.uvarint(uint64(g.edgeID[i]))
			e.uvarint(uint64(g.edgeN[i]))
		}
		e.flush(1 << 15)
	}
	e.uvarint(uint64(len(g.symID)))
	for _, id := range g.symID {
		e.uvarint(uint64(id + 1))
	}
}

// decodeGraph decodes the cached graph of nLive files; an error means the
// cache does not hold a usable one and the graph is rebuilt.
func (c *cacheData) decodeGraph(live []*fileData) (*graph, error) {
	nLive, nSyms := len(live), 0
	for _, f := range live {
		nSyms += len(f.syms)
	}
	d := &decoder{s: c.graphBlob}
	g := &graph{names: d.strs()}
	g.defStart = make([]int32, len(g.names)+1)
	for id := range g.names {
		n := d.count()
		for range n {
			f := d.uvarint()
			if f >= uint64(nLive) {
				d.err = errCorrupt
			}
			g.defFile = append(g.defFile, int32(f))
		}
		g.defStart[id+1] = int32(len(g.defFile))
	}
	if d.count() != nLive {
		d.err = errCorrupt
	}
	g.edgeStart = make([]int32, nLive+1)
	for f := range nLive {
		n := d.count()
		for range n {
			id := d.uvarint()
			if id >= uint64(len(g.names)) {
				d.err = errCorrupt
			}
			g.edgeID = append(g.edgeID, int32(id))
			g.edgeN = append(g.edgeN, int32(d.uvarint()))
		}
		g.edgeStart[f+1] = int32(len(g.edgeID))
	}
	if d.count() != nSyms {
		d.err = errCorrupt
	}
	g.symID = make([]int32, nSyms)
	for i := range g.symID {
		id := d.uvarint()
		if id > uint64(len(g.names)) {
			d.err = errCorrupt
		}
		g.symID[i] = int32(id) - 1
	}
	if d.err != nil {
		return nil, fmt.Errorf("repo map cache graph: %w", d.err)
	}
	return g, nil
}

// readString reads a file into a string without the copy string(bytes)
// would make: the cache is tens of MB on a large tree.
// The cache lives in the volumes (context/), which the agent can write:
// only a regular file is read (a FIFO there would block planagent's planner).
func readString(file string) (string, error) {
	f, err := protocol.OpenRegular(file, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var sb strings.Builder
	if fi, err := f.Stat(); err == nil {
		sb.Grow(int(fi.Size()) + 1)
	}
	if _, err := io.Copy(&sb, f); err != nil {
		return "", err
	}
	return sb.String(), nil
}
