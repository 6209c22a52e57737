package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed list_dir.md
var listDirDescription string

const (
	listDirMaxEntries = 500
	listDirMaxHidden  = 20 // ignored entries named at the end
)

type listDirParams struct {
	Path string `json:"path,omitempty" description:"Directory relative to the workspace root (default: the root)"`
}

// NewListDir returns the list_dir tool.
func NewListDir(ws *Workspace) Tool {
	return NewFunc("list_dir", listDirDescription, true,
		func(ctx context.Context, p listDirParams) (Result, error) { return listDir(ctx, ws, p) })
}

func listDir(ctx context.Context, ws *Workspace, p listDirParams) (Result, error) {
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
	all, err := os.ReadDir(abs) // sorted by name
	if err != nil {
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	// Excluded dirs are not part of the workspace: neither listed nor named.
	all = slices.DeleteFunc(all, func(e fs.DirEntry) bool { return ws.isExcluded(filepath.Join(abs, e.Name())) })
	entries, hidden, err := ws.visible(ctx, rel, all)
	if err != nil {
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	if len(all) == 0 {
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
	if len(hidden) > 0 {
		// Named, so the model knows they exist without their contents
		// flooding the answer; they stay readable by path.
		names := make([]string, 0, min(len(hidden), listDirMaxHidden))
		for _, e := range hidden[:min(len(hidden), listDirMaxHidden)] {
			names = append(names, describeName(e))
		}
		more := ""
		if len(hidden) > listDirMaxHidden {
			more = fmt.Sprintf(" and %d more", len(hidden)-listDirMaxHidden)
		}
		fmt.Fprintf(&b, "\n(not listed, as glob and grep skip them too — ignored by .gitignore or never searched: %s%s)",
			strings.Join(names, ", "), more)
	}
	return Result{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// visible splits the entries of the directory rel into those the file
// policy shows and those it hides.
func (w *Workspace) visible(ctx context.Context, rel string, all []fs.DirEntry) (shown, hidden []fs.DirEntry, err error) {
	kept := map[string]bool{}
	err = w.files.Walk(ctx, rel, func(child string, d fs.DirEntry) error {
		kept[d.Name()] = true
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range all {
		if kept[e.Name()] {
			shown = append(shown, e)
		} else {
			hidden = append(hidden, e)
		}
	}
	return shown, hidden, nil
}

func describeName(e fs.DirEntry) string {
	if e.IsDir() {
		return e.Name() + "/"
	}
	return e.Name()
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
