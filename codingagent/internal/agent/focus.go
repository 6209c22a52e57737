package agent

import (
	"fmt"
	"os"
	"strings"

	"github.com/codeagent/codeagent/internal/tools"
)

// focusSet is the files whose content the system prompt carries (the
// "focused files"): each file lives there once, re-read from disk each
// time the request is shaped anew (see stableView), instead of once per
// read in the history.
type focusSet struct {
	cap      int          // characters
	maxFiles int          // files: the working set, not every file of the session
	entries  []focusEntry // least recently touched first
}

type focusEntry struct {
	path   string // workspace-relative
	edited bool
}

func newFocusSet(capChars, maxFiles int) *focusSet {
	return &focusSet{cap: capChars, maxFiles: maxFiles}
}

// touch adds path (or marks it used again); once edited, a file stays edited.
func (f *focusSet) touch(path string, edited bool) {
	for i, e := range f.entries {
		if e.path == path {
			edited = edited || e.edited
			f.entries = append(f.entries[:i], f.entries[i+1:]...)
			break
		}
	}
	f.entries = append(f.entries, focusEntry{path: path, edited: edited})
}

func (f *focusSet) paths() []string {
	out := make([]string, len(f.entries))
	for i, e := range f.entries {
		out[i] = e.path
	}
	return out
}

// focusedFile is one file as rendered into the prompt.
type focusedFile struct {
	path   string
	edited bool
	text   string
	lines  int
}

// render reads every focused file and returns those that fit the caps.
// Files that are gone or binary leave the set; beyond maxFiles the least
// recently touched go; over the character cap, the least recently used
// unedited file goes first, then edited ones, so the work in progress
// stays visible longest. A file that leaves
// comes back when a tool touches it again; until then its latest read
// stands in the history (see view).
func (f *focusSet) render(ws *tools.Workspace) []focusedFile {
	var files []focusedFile
	kept := f.entries[:0]
	for _, e := range f.entries {
		abs, err := ws.Resolve(e.path)
		if err != nil {
			continue
		}
		data, err := os.ReadFile(abs)
		if err != nil || tools.IsBinary(data) {
			continue
		}
		text, lines := numberLines(string(data))
		if len(text) > f.cap {
			continue // never fits: read_file by range serves it instead
		}
		kept = append(kept, e)
		files = append(files, focusedFile{path: e.path, edited: e.edited, text: text, lines: lines})
	}
	f.entries = kept
	total := 0
	for _, ff := range files {
		total += len(ff.text)
	}
	if f.maxFiles > 0 && len(files) > f.maxFiles {
		// The working set: the files touched last, edited or not.
		drop := len(files) - f.maxFiles
		for _, ff := range files[:drop] {
			total -= len(ff.text)
		}
		files = files[drop:]
		f.entries = f.entries[drop:]
	}
	for total > f.cap {
		victim := -1
		for i, ff := range files {
			if !ff.edited {
				victim = i
				break
			}
		}
		if victim < 0 {
			victim = 0
		}
		total -= len(files[victim].text)
		files = append(files[:victim], files[victim+1:]...)
		f.entries = append(f.entries[:victim], f.entries[victim+1:]...)
	}
	return files
}

// numberLines renders content like read_file does (line number, tab, line),
// so line numbers the model saw in a tool result stay valid here.
func numberLines(content string) (string, int) {
	if content == "" {
		return "", 0
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	var b strings.Builder
	b.Grow(len(content) + 8*len(lines))
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, strings.TrimSuffix(l, "\r"))
	}
	return b.String(), len(lines)
}

// renderFocused is the "Focused files" section of the system prompt.
func renderFocused(files []focusedFile) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Focused files\n\nThe content of the files you read or changed, read from disk when the conversation was last condensed. " +
		"Earlier tool results for these files are abbreviated in the conversation: rely on this section, " +
		"and on the tool calls that follow in full in the conversation, which are newer. " +
		"Line prefixes are line numbers (not part of the file).\n")
	for _, ff := range files {
		state := "read"
		if ff.edited {
			state = "edited"
		}
		fmt.Fprintf(&b, "\n<file path=%q lines=\"%d\" state=%q>\n%s</file>\n", ff.path, ff.lines, state, ff.text)
	}
	return b.String()
}
