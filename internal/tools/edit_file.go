package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

//go:embed edit_file.md
var editFileDescription string

type editFileParams struct {
	Path      string `json:"path" description:"File path, relative to the workspace root"`
	OldString string `json:"old_string" description:"Exact text to replace; must occur exactly once. Empty to create a new file"`
	NewString string `json:"new_string" description:"Replacement text"`
}

// NewEditFile returns the edit_file tool.
func NewEditFile(ws *Workspace) Tool {
	return NewFunc("edit_file", editFileDescription, false,
		func(ctx context.Context, p editFileParams) (Result, error) { return editFile(ws, p) })
}

func editFile(ws *Workspace, p editFileParams) (Result, error) {
	abs, err := ws.Resolve(p.Path)
	if err != nil {
		return toolError(err), nil
	}
	rel := ws.Rel(abs)
	changed := []FileRef{{Path: rel, Changed: true}}
	data, err := os.ReadFile(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) && p.OldString == "":
		if err := writeFileAtomic(abs, []byte(p.NewString)); err != nil {
			return errorResult("could not create %q: %v", rel, err), nil
		}
		return Result{Content: fmt.Sprintf("created %s: %s", rel, plural(countLines(p.NewString), "line")), Files: changed}, nil
	case err != nil:
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	case p.OldString == "":
		return errorResult("old_string is empty but %q already exists: give the exact text to replace, or use write_file to replace the whole file", rel), nil
	case IsBinary(data):
		return errorResult("%q looks like a binary file; edit_file changes text files only", rel), nil
	}
	content := string(data)
	switch n := strings.Count(content, p.OldString); n {
	case 0:
		return errorResult("old_string was not found in %q (0 occurrences). It must match the file exactly, including whitespace, indentation and line endings; read_file the region and copy the text", rel), nil
	case 1:
	default:
		return errorResult("old_string occurs %d times in %q; it must occur exactly once. Include more surrounding lines to make it unique", n, rel), nil
	}
	if p.OldString == p.NewString {
		return errorResult("old_string and new_string are identical; nothing to change in %q", rel), nil
	}
	updated := strings.Replace(content, p.OldString, p.NewString, 1)
	if err := writeFileAtomic(abs, []byte(updated)); err != nil {
		return errorResult("could not write %q: %v", rel, err), nil
	}
	line := strings.Count(content[:strings.Index(content, p.OldString)], "\n") + 1
	return Result{
		Content: fmt.Sprintf("edited %s: replaced %s with %s at line %d",
			rel, plural(countLines(p.OldString), "line"), plural(countLines(p.NewString), "line"), line),
		Files: changed,
	}, nil
}
