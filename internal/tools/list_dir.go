package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

//go:embed list_dir.md
var listDirDescription string

const listDirMaxEntries = 500

type listDirParams struct {
	Path string `json:"path,omitempty" description:"Directory relative to the workspace root (default: the root)"`
}

// NewListDir returns the list_dir tool.
func NewListDir(ws *Workspace) Tool {
	return NewFunc("list_dir", listDirDescription, true,
		func(ctx context.Context, p listDirParams) (Result, error) { return listDir(ws, p) })
}

func listDir(ws *Workspace, p listDirParams) (Result, error) {
	if p.Path == "" {
		p.Path = "."
	}
	abs, err := ws.Resolve(p.Path)
	if err != nil {
		return toolError(err), nil
	}
	rel := ws.Rel(abs)
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errorResult("directory %q does not exist; list_dir its parent or use glob to find it", rel), nil
		}
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	if !fi.IsDir() {
		return errorResult("%q is a file, not a directory; use read_file to read it", rel), nil
	}
	entries, err := os.ReadDir(abs) // sorted by name
	if err != nil {
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	if len(entries) == 0 {
		return Result{Content: fmt.Sprintf("%s/ is empty", rel)}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/ (%d entries)\n", rel, len(entries))
	for i, e := range entries {
		if i == listDirMaxEntries {
			fmt.Fprintf(&b, "\n(showing the first %d of %d entries; use glob to narrow down)", listDirMaxEntries, len(entries))
			break
		}
		b.WriteString(describeEntry(abs, e))
		b.WriteByte('\n')
	}
	return Result{Content: strings.TrimRight(b.String(), "\n")}, nil
}

func describeEntry(dir string, e fs.DirEntry) string {
	name := e.Name()
	switch {
	case e.IsDir():
		return name + "/"
	case e.Type()&fs.ModeSymlink != 0:
		target, err := os.Readlink(filepath.Join(dir, name))
		if err != nil {
			return name + " -> ?"
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.IsDir() {
			return name + "/ -> " + target
		}
		return name + " -> " + target
	}
	info, err := e.Info()
	if err != nil {
		return name
	}
	return fmt.Sprintf("%s  (%d bytes)", name, info.Size())
}
