package chat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/term"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Keys the line editor gives the chat. x/term maps Ctrl-P to Up and ends
// ReadLine with io.EOF on Ctrl-C, so keyReader rewrites both bytes before
// the terminal sees them: Ctrl-P becomes a private-use rune that reaches
// the AutoCompleteCallback, Ctrl-C an "erase the line, Enter" that ends
// ReadLine with the interrupt noted on the side.
const (
	keyTogglePlan = '\ue010'
	keySearch     = 0x12 // Ctrl-R
	keyCancel     = 0x07 // Ctrl-G leaves a search
)

var errInterrupted = errors.New("interrupted")

// historyLimit bounds the history file (oldest lines are dropped).
const historyLimit = 1000

// editor reads lines from a terminal with editing (x/term: arrows, Home/End,
// Ctrl-A/E/K/U/W), a history kept in a file (Up/Down), Ctrl-R reverse
// search, and Ctrl-P toggling plan mode at once, without Enter. The
// terminal is raw only while a line is read, so output between lines
// (the agent's answer, approval questions) is cooked as usual.
type editor struct {
	fd   int
	t    *term.Terminal
	keys *keyReader
	hist *history

	// togglePlan switches plan mode and returns the new prompt and a line to show.
	togglePlan func() (prompt, note string)

	searching bool
	query     string
	match     int // history index of the current match
	prompt    string

	rawMu sync.Mutex
	raw   *term.State // the terminal's state to restore while a line is read
}

func newEditor(in *os.File, out io.Writer, historyFile string, togglePlan func() (string, string)) *editor {
	keys := &keyReader{r: in}
	e := &editor{fd: int(in.Fd()), keys: keys, hist: loadHistory(historyFile), togglePlan: togglePlan}
	e.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, out}, "")
	e.t.History = e.hist
	e.t.AutoCompleteCallback = e.key
	return e
}

// readLine shows prompt and returns the edited line; errInterrupted for
// Ctrl-C, io.EOF for Ctrl-D on an empty line.
func (e *editor) readLine(prompt string) (string, error) {
	state, err := term.MakeRaw(e.fd)
	if err != nil {
		return "", fmt.Errorf("line editing: %w", err)
	}
	e.rawMu.Lock()
	e.raw = state
	e.rawMu.Unlock()
	defer e.restore()
	if w, h, err := term.GetSize(e.fd); err == nil {
		_ = e.t.SetSize(w, h)
	}
	e.prompt, e.searching = prompt, false
	e.t.SetPrompt(prompt)
	// An answer to a question (no prompt of ours: "y", "a") is no input
	// worth recalling.
	e.hist.skip.Store(prompt == "")
	line, err := e.t.ReadLine()
	if e.keys.interrupted.Swap(false) {
		return "", errInterrupted
	}
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil
	}
	return line, err
}

// restore puts the terminal back as it was if a line is being read: the
// chat may end (SIGTERM) while a read still waits for a key.
func (e *editor) restore() {
	e.rawMu.Lock()
	defer e.rawMu.Unlock()
	if e.raw != nil {
		_ = term.Restore(e.fd, e.raw)
		e.raw = nil
	}
}

// key handles the keys x/term leaves to the callback; ok=false lets x/term
// insert a printable key as usual.
func (e *editor) key(line string, pos int, key rune) (string, int, bool) {
	switch {
	case key == keyTogglePlan:
		prompt, note := e.togglePlan()
		e.prompt, e.searching = prompt, false
		e.t.SetPrompt(prompt)
		_, _ = e.t.Write([]byte(note + "\n")) // redraws the prompt and the line
		return line, pos, true
	case key == keySearch:
		if !e.searching {
			e.searching, e.query, e.match = true, "", -1
		}
		return e.search(line, true)
	case e.searching && key == keyCancel:
		e.searching = false
		e.t.SetPrompt(e.prompt)
		_, _ = e.t.Write(nil)
		return "", 0, true
	case e.searching && key >= 32 && key != keyTogglePlan:
		e.query += string(key)
		e.match = -1
		return e.search(line, false)
	}
	return line, pos, false
}

// search shows the newest history line older than the current match that
// contains the query; older=false starts again from the newest.
func (e *editor) search(line string, older bool) (string, int, bool) {
	start := 0
	if older && e.match >= 0 {
		start = e.match + 1
	}
	found := ""
	for i := start; i < e.hist.Len(); i++ {
		if h := e.hist.At(i); e.query == "" || strings.Contains(h, e.query) {
			e.match, found = i, h
			break
		}
	}
	label := "reverse-i-search"
	if found == "" && e.query != "" {
		label = "failing reverse-i-search"
		found = line
	}
	e.t.SetPrompt(fmt.Sprintf("(%s)`%s': ", label, e.query))
	_, _ = e.t.Write(nil)
	return found, len(found), true
}

// keyReader rewrites Ctrl-P and Ctrl-C (see keyTogglePlan), and the Home
// and End keys as tmux, screen and xterm's application mode send them
// (ESC[1~ ESC[4~ ESC[7~ ESC[8~, ESC O H, ESC O F), which x/term does not
// know, as the Ctrl-A and Ctrl-E it does. A sequence split across reads
// is held until its end arrives.
type keyReader struct {
	r           io.Reader
	interrupted atomic.Bool
	pending     []byte // the start of a sequence that a read ended inside
}

// keySequences are the escape sequences keyReader rewrites.
var keySequences = []struct{ seq, key string }{
	{"\x1b[1~", "\x01"}, {"\x1b[7~", "\x01"}, {"\x1bOH", "\x01"}, // Home
	{"\x1b[4~", "\x05"}, {"\x1b[8~", "\x05"}, {"\x1bOF", "\x05"}, // End
}

func (k *keyReader) Read(p []byte) (int, error) {
	if len(p) < 16 {
		return k.r.Read(p)
	}
	// A byte becomes at most 3 (a private-use rune), so a third of p
	// (less what is pending) always fits once rewritten.
	buf := make([]byte, len(p)/3-len(k.pending))
	n, err := k.r.Read(buf)
	in := append(k.pending, buf[:n]...)
	k.pending = nil
	out := p[:0]
	for len(in) > 0 {
		if in[0] == 0x1b {
			key, used, partial := matchKeySequence(in)
			if partial && err == nil {
				k.pending = append([]byte(nil), in...)
				break
			}
			if used > 0 {
				out = append(out, key...)
				in = in[used:]
				continue
			}
		}
		switch b := in[0]; b {
		case 0x10:
			out = append(out, string(keyTogglePlan)...)
		case 0x03:
			k.interrupted.Store(true)
			out = append(out, 0x05, 0x15, '\r') // End, erase the line, Enter
		default:
			out = append(out, b)
		}
		in = in[1:]
	}
	return len(out), err
}

// matchKeySequence is the key that in starts with (and its length), or
// partial when in is the unfinished start of one.
func matchKeySequence(in []byte) (key string, used int, partial bool) {
	for _, s := range keySequences {
		switch {
		case bytes.HasPrefix(in, []byte(s.seq)):
			return s.key, len(s.seq), false
		case len(in) < len(s.seq) && bytes.HasPrefix([]byte(s.seq), in):
			partial = true
		}
	}
	return "", 0, partial
}

// history is x/term's History kept in a file, one line per entry (newest
// last); the same line twice in a row is kept once, empty lines never.
type history struct {
	mu    sync.Mutex
	path  string
	lines []string    // oldest first
	skip  atomic.Bool // the line being read is not kept
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	// In the volumes (context/sessions/), which the agent can write: a
	// FIFO or a symbolic link there is not read, nor appended to.
	f, err := protocol.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			h.lines = append(h.lines, l)
		}
	}
	if len(h.lines) > historyLimit {
		h.lines = h.lines[len(h.lines)-historyLimit:]
	}
	return h
}

func (h *history) Add(entry string) {
	if h.skip.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.TrimSpace(entry) == "" || strings.ContainsAny(entry, "\n\r") ||
		(len(h.lines) > 0 && h.lines[len(h.lines)-1] == entry) {
		return
	}
	h.lines = append(h.lines, entry)
	if len(h.lines) > historyLimit {
		h.lines = h.lines[len(h.lines)-historyLimit:]
	}
	if h.path == "" {
		return
	}
	// Appended, not rewritten: two chats on one workspace both keep theirs.
	if f, err := protocol.OpenRegular(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = f.WriteString(entry + "\n")
		_ = f.Close()
	}
}

func (h *history) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

func (h *history) At(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines[len(h.lines)-1-i]
}
