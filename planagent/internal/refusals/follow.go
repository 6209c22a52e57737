package refusals

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/codeagent/codeagent/planagent/internal/safefs"
)

// Bounds of the reader: the file lies in volumes a container may be able
// to write, so it is read as untrusted input.
const (
	// MaxLine is the longest line taken; a longer one is garbage. The
	// writer's lines stay well under it (its fields are clipped).
	MaxLine = 16 << 10
	// maxPass is what one Poll reads at most; the rest waits for the next.
	maxPass = 8 << 20
)

// Follower reads the refusals appended to the file from where it ended
// when it began following, through safefs (no link followed, nothing but
// a regular file opened), and across the writer's rotations. Lines that
// are not refusals are skipped with one warning; a partial last line
// waits for its end. It is safe for concurrent use.
type Follower struct {
	mu    sync.Mutex
	root  string // the volumes dir: trusted, the operator's
	rel   string // the file beneath it
	log   *slog.Logger
	on    func(Record)
	f     *os.File
	off   int64
	line  []byte // a line whose end has not been read yet
	long  bool   // inside an overlong line: dropped up to its newline
	warns map[string]bool
}

// Follow begins following the file rel beneath root: from its current end
// when it is there, from its start when it appears later. on is called,
// one record at a time, for each refusal read by Poll.
func Follow(root, rel string, log *slog.Logger, on func(Record)) *Follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fo := &Follower{root: root, rel: rel, log: log, on: on, warns: map[string]bool{}}
	if f := fo.open(); f != nil {
		if end, err := f.Seek(0, io.SeekEnd); err == nil {
			fo.f, fo.off = f, end
		} else {
			_ = f.Close()
		}
	}
	return fo
}

// Poll reads what was appended since the last Poll.
func (fo *Follower) Poll() {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if fo.f == nil {
		if fo.f = fo.open(); fo.f == nil {
			return
		}
		fo.off = 0
	}
	fo.drain()
	cur := fo.open()
	if cur == nil {
		return // renamed away and not created again yet, or refused: later
	}
	if same(fo.f, cur) {
		_ = cur.Close()
		return
	}
	// Rotated: what was written to the old file before its rename, then
	// the new one from its start.
	fo.drain()
	fo.endFile()
	_ = fo.f.Close()
	fo.f, fo.off = cur, 0
	fo.drain()
}

// Close stops following.
func (fo *Follower) Close() {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if fo.f != nil {
		_ = fo.f.Close()
		fo.f = nil
	}
}

// open opens the file through safefs; nil when it is not there, or is not
// a regular file beneath root (warned once).
func (fo *Follower) open() *os.File {
	r, err := safefs.OpenRoot(fo.root, nil)
	if err != nil {
		fo.warn("root", "the egress refusals file cannot be read: refusals are in the gateway's log only", "err", err)
		return nil
	}
	defer r.Close()
	f, err := r.Open(fo.rel)
	var pe *fs.PathError
	switch {
	case err == nil:
		return f
	case errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe):
		return nil // not written yet
	}
	fo.warn("open", "the egress refusals file is refused: refusals are in the gateway's log only", "err", err)
	return nil
}

// drain reads the held file from off to its end (at most maxPass).
func (fo *Follower) drain() {
	if fi, err := fo.f.Stat(); err == nil && fi.Size() < fo.off {
		// Truncated in place: from its start again.
		fo.off, fo.line, fo.long = 0, nil, false
	}
	buf := make([]byte, 64<<10)
	for read := 0; read < maxPass; {
		n, err := fo.f.ReadAt(buf, fo.off)
		fo.off += int64(n)
		read += n
		fo.feed(buf[:n])
		if err != nil || n == 0 {
			return
		}
	}
}

// feed splits p into lines, keeping a partial last one for later.
func (fo *Follower) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !fo.long {
			if len(fo.line)+len(chunk) > MaxLine {
				fo.long, fo.line = true, nil
				fo.garbage()
			} else {
				fo.line = append(fo.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !fo.long {
			fo.parse(fo.line)
		}
		fo.line, fo.long = fo.line[:0], false
		p = p[i+1:]
	}
}

// endFile is the end of a rotated file: a line without its newline there
// is not a writer's.
func (fo *Follower) endFile() {
	if len(fo.line) > 0 || fo.long {
		fo.garbage()
	}
	fo.line, fo.long = nil, false
}

func (fo *Follower) parse(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		fo.garbage()
		return
	}
	switch {
	case r.Note != "":
		fo.log.Info("egress refusals file", "note", clip(r.Note, 200))
	case r.Host == "" || r.Method == "" || len(r.Host) > maxHost+8 || len(r.Reason) > maxReason+8 || len(r.Client) > maxClient+8:
		fo.garbage()
	default:
		fo.on(r)
	}
}

func (fo *Follower) garbage() {
	fo.warn("garbage", "skipping lines of the egress refusals file that are not refusals (the gateway writes none such: something else wrote to it)",
		"file", fo.rel)
}

// warn logs msg once per kind.
func (fo *Follower) warn(kind, msg string, args ...any) {
	if fo.warns[kind] {
		return
	}
	fo.warns[kind] = true
	fo.log.Warn(msg, args...)
}

func same(a, b *os.File) bool {
	fa, errA := a.Stat()
	fb, errB := b.Stat()
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
