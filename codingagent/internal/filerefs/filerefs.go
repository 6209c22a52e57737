// Package filerefs expands @file:KEYWORD references in a user's input: the
// files they name are read and appended to the input as a
// <Context> block, so the model starts with them instead of searching.
package filerefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/tools"
)

const (
	maxFileLines = 1000
	maxFileBytes = 200 << 10
	// maxFiles bounds the whole block: a short keyword such as @file:a can
	// match most of a repository.
	maxFiles = 50
	// searchTimeout bounds the glob fallbacks of one Expand call.
	searchTimeout = 30 * time.Second
)

// File is one referenced file as appended to the input.
type File struct {
	Path      string // workspace-relative, slash-separated
	Content   string // possibly truncated; the truncation is noted at its end
	Truncated bool
}

// Result is the expanded input.
type Result struct {
	Text     string // the input with the <Context> block appended
	Files    []File
	Warnings []string
}

// Expand resolves every @file:KEYWORD in input; see ExpandContext.
func Expand(ws *tools.Workspace, input string) (Result, error) {
	return ExpandContext(context.Background(), ws, input)
}

// ExpandContext resolves every @file:KEYWORD in input. A keyword is tried
// as an exact workspace path, then as the glob **/KEYWORD, then
// **/*KEYWORD*; the first that matches files wins, and all its files are
// read. Files from all references are sorted and de-duplicated. References
// that match nothing (including paths outside the workspace) and binary
// files become warnings, which are also shown to the model in the block as
// <Warning> elements. Input without references is returned unchanged.
func ExpandContext(ctx context.Context, ws *tools.Workspace, input string) (Result, error) {
	res := Result{Text: input}
	keywords := references(input)
	if len(keywords) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()

	var paths []string
	for _, kw := range keywords {
		found, err := locate(ctx, ws, kw)
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return res, fmt.Errorf("expand @file references: %w", err)
		}
		if err != nil || len(found) == 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("@file:%s matched no file in the workspace", kw))
			continue
		}
		paths = append(paths, found...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if len(paths) > maxFiles {
		res.Warnings = append(res.Warnings, fmt.Sprintf("@file references matched %d files; only the first %d are included, use more specific keywords", len(paths), maxFiles))
		paths = paths[:maxFiles]
	}
	for _, rel := range paths {
		f, warning := readFile(ws, rel)
		if warning != "" {
			res.Warnings = append(res.Warnings, warning)
			continue
		}
		res.Files = append(res.Files, f)
	}
	res.Text = input + render(res.Files, res.Warnings)
	return res, nil
}

// references returns the distinct keywords in order of appearance. A
// reference is a whole whitespace-separated word, so that an e-mail address
// like ops@file:server is not taken for one.
func references(input string) []string {
	var out []string
	for _, word := range strings.Fields(input) {
		kw, ok := strings.CutPrefix(word, "@file:")
		if ok && kw != "" && !slices.Contains(out, kw) {
			out = append(out, kw)
		}
	}
	return out
}

// locate returns the workspace-relative files a keyword names. Trailing
// sentence punctuation ("see @file:main.go.") is dropped when the keyword
// as written matches nothing.
func locate(ctx context.Context, ws *tools.Workspace, kw string) ([]string, error) {
	found, err := locateExact(ctx, ws, kw)
	if len(found) > 0 || ctx.Err() != nil {
		return found, err
	}
	if trimmed := strings.TrimRight(kw, `.,;:!?)]}'"`); trimmed != "" && trimmed != kw {
		return locateExact(ctx, ws, trimmed)
	}
	return found, err
}

func locateExact(ctx context.Context, ws *tools.Workspace, kw string) ([]string, error) {
	if abs, err := ws.Resolve(kw); err == nil {
		if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
			return []string{ws.Rel(abs)}, nil
		}
	} else if errors.Is(err, tools.ErrOutsideWorkspace) {
		return nil, err
	}
	var lastErr error
	for _, pattern := range []string{"**/" + kw, "**/*" + kw + "*"} {
		found, err := ws.Glob(ctx, pattern)
		if len(found) > 0 {
			return found, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// readFile reads one matched file within the limits, or says why not.
func readFile(ws *tools.Workspace, rel string) (File, string) {
	abs, err := ws.Resolve(rel)
	if err != nil {
		return File{}, fmt.Sprintf("%s: %v", rel, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return File{}, fmt.Sprintf("could not read %s: %v", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return File{}, fmt.Sprintf("could not read %s: %v", rel, err)
	}
	if tools.IsBinary(data) {
		return File{}, fmt.Sprintf("%s is a binary file; skipped", rel)
	}
	content, truncated := string(data), false
	if len(content) > maxFileBytes {
		// Cut at a line end so the model never sees half a line.
		content = content[:maxFileBytes]
		if i := strings.LastIndexByte(content, '\n'); i >= 0 {
			content = content[:i+1]
		}
		truncated = true
	}
	if lines := strings.SplitAfter(content, "\n"); len(lines) > maxFileLines && !(len(lines) == maxFileLines+1 && lines[maxFileLines] == "") {
		content = strings.Join(lines[:maxFileLines], "")
		truncated = true
	}
	if truncated {
		shown := strings.Count(content, "\n")
		content = strings.TrimRight(content, "\n") + fmt.Sprintf(
			"\n[... truncated: only the first %d lines shown (limit %d lines / %d KB per file); read the rest with read_file ...]\n",
			shown, maxFileLines, maxFileBytes>>10)
	}
	return File{Path: rel, Content: content, Truncated: truncated}, ""
}

// render builds the block appended to the input.
func render(files []File, warnings []string) string {
	if len(files) == 0 && len(warnings) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n<Context>\n")
	for _, f := range files {
		fmt.Fprintf(&b, "<File path=\"%s\"><![CDATA[%s]]></File>\n", escapeAttr(f.Path), escapeCDATA(f.Content))
	}
	for _, w := range warnings {
		fmt.Fprintf(&b, "<Warning>%s</Warning>\n", escapeText(w))
	}
	b.WriteString("</Context>")
	return b.String()
}

// escapeCDATA splits every "]]>" across two CDATA sections, the only way to
// carry it inside one.
func escapeCDATA(s string) string {
	return strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>")
}

func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func escapeAttr(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
