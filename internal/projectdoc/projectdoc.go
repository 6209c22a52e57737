// Package projectdoc reads the project's own instructions for coding
// agents from the root of the workspace: AGENTS.md (the file Codex, Gemini
// CLI, crush and others read), or CLAUDE.md (Claude Code's) when there is
// no AGENTS.md. The planner and every task get it in their project
// context, as those tools give it to theirs.
package projectdoc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Names are the files looked for, in order; the first found is used.
var Names = []string{"AGENTS.md", "CLAUDE.md"}

// MaxBytes caps what is read of the file, as Codex caps its
// project_doc_max_bytes at 32 KiB: the file goes into every model call of
// every task, so a long one would cost on each.
const MaxBytes = 32 << 10

// Doc is the file read.
type Doc struct {
	Name string // AGENTS.md or CLAUDE.md
	Text string // at most MaxBytes of it, cut at a line end
	Size int64  // the file's whole size
}

// Cut reports whether only the start of the file is in Text.
func (d Doc) Cut() bool { return d.Size > int64(len(d.Text)) }

// Body is Text with, when the file was cut, a last line saying so.
func (d Doc) Body() string {
	body := strings.TrimSpace(d.Text)
	if d.Cut() {
		body += fmt.Sprintf("\n\n[%s is %d bytes: only its first %d are included here; read the file for the rest]", d.Name, d.Size, len(d.Text))
	}
	return body
}

// Read returns the first of Names at the root of workspace, and false when
// there is none (or workspace is ""). Only a regular file is read, or a
// symbolic link to one inside the workspace (CLAUDE.md is often a link to
// AGENTS.md); anything else (a FIFO, a link out of the workspace, a
// directory) is an error naming it, so the caller can say why it is left out.
func Read(workspace string) (Doc, bool, error) {
	if workspace == "" {
		return Doc{}, false, nil
	}
	for _, name := range Names {
		p := filepath.Join(workspace, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Doc{}, false, fmt.Errorf("project instructions %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if p, err = inside(workspace, p); err != nil {
				return Doc{}, false, err
			}
		}
		data, size, err := readCapped(p)
		if err != nil {
			return Doc{}, false, fmt.Errorf("project instructions %s: %w", filepath.Join(workspace, name), err)
		}
		return Doc{Name: name, Text: cut(data, size), Size: size}, true, nil
	}
	return Doc{}, false, nil
}

// inside resolves the link p and returns its target when that stays in
// workspace.
func inside(workspace, p string) (string, error) {
	root, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", fmt.Errorf("project instructions: workspace %s: %w", workspace, err)
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("project instructions %s: a symbolic link that leads nowhere: %w", p, err)
	}
	if rel, err := filepath.Rel(root, target); err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("project instructions %s: a symbolic link to %s, outside the workspace: refused", p, target)
	}
	return target, nil
}

// readCapped reads at most MaxBytes of the regular file p, and its size.
func readCapped(p string) ([]byte, int64, error) {
	f, err := protocol.OpenRegular(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	// A file growing meanwhile is read up to the cap all the same.
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, 0, err
	}
	size := max(fi.Size(), int64(len(data)))
	return data[:min(len(data), MaxBytes)], size, nil
}

// cut returns data as text; when the file is longer, it ends at the last
// line end (else the last whole character) within it.
func cut(data []byte, size int64) string {
	if size <= int64(len(data)) {
		return string(data)
	}
	if i := strings.LastIndexByte(string(data), '\n'); i > 0 {
		return string(data[:i+1])
	}
	for len(data) > 0 && !utf8.Valid(data) {
		data = data[:len(data)-1]
	}
	return string(data)
}
