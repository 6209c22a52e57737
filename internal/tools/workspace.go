package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/internal/filetree"
)

// maxSymlinkHops bounds symlink expansion in Resolve so a link cycle fails
// instead of looping; Linux itself gives up after 40.
const maxSymlinkHops = 40

// Workspace is the directory every tool is confined to.
type Workspace struct {
	root string // absolute, cleaned, symlinks resolved
	// excluded are directories inside root that are not part of the
	// workspace (the volumes dir of `--workspace .`): never listed,
	// searched, read or written by a tool.
	excluded []string
	files    *filetree.Tree // which files glob, grep and list_dir show
}

// Exclude takes dirs (absolute, or relative to the root) out of the
// workspace. A dir outside the root is ignored.
func (w *Workspace) Exclude(dirs ...string) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(w.root, d)
		}
		real, err := followSymlinks(filepath.Clean(d))
		if err != nil || real == w.root || !w.contains(real) {
			continue
		}
		w.excluded = append(w.excluded, real)
	}
	w.files = filetree.New(w.root, filetree.Options{Exclude: w.ExcludePatterns()})
}

// ExcludePatterns are the excluded dirs as anchored .gitignore patterns,
// for other walkers of the workspace (the repo map) to leave them out too.
func (w *Workspace) ExcludePatterns() []string {
	out := make([]string, len(w.excluded))
	for i, x := range w.excluded {
		out[i] = "/" + w.Rel(x) + "/"
	}
	return out
}

// Files is the file policy of the workspace: what glob, grep and list_dir
// show, for other views of it (the planner's) to show the same.
func (w *Workspace) Files() *filetree.Tree { return w.files }

// isExcluded reports whether abs (resolved) is an excluded dir or inside one.
func (w *Workspace) isExcluded(abs string) bool { return w.excludedBy(abs) != "" }

// excludedBy is the excluded dir holding abs, or "".
func (w *Workspace) excludedBy(abs string) string {
	for _, x := range w.excluded {
		if abs == x || strings.HasPrefix(abs, x+string(filepath.Separator)) {
			return x
		}
	}
	return ""
}

// NewWorkspace confines tools to root, which must be an existing directory.
func NewWorkspace(root string) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w (create the directory or point --workspace at an existing one)", root, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory: point it at a directory", root)
	}
	return &Workspace{root: real, files: filetree.New(real, filetree.Options{})}, nil
}

// Root returns the absolute, symlink-resolved workspace directory.
func (w *Workspace) Root() string { return w.root }

// Resolve maps a path given by the model to an absolute path inside the
// workspace. Relative paths are taken relative to the root. Symlinks in the
// part of the path that exists are followed (a dangling link too, by its
// target), so the result names the file the OS would really touch; anything
// that ends up outside the root is refused. The file itself need not exist.
func (w *Workspace) Resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New(`path is empty: give a path relative to the workspace, e.g. "." or "src/main.go"`)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	joined := p
	if !filepath.IsAbs(p) {
		joined = filepath.Join(w.root, p)
	}
	real, err := followSymlinks(filepath.Clean(joined))
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	if !w.contains(real) {
		return "", &outsideError{path: p, root: w.root}
	}
	if x := w.excludedBy(real); x != "" {
		return "", fmt.Errorf("path %q is in %s/, which is not part of the workspace (planagent's volumes)", p, w.Rel(x))
	}
	return real, nil
}

// Rel returns abs relative to the root, slash-separated ("." for the root).
// A path outside the root is returned unchanged (slash-separated) so that a
// caller's mistake is visible rather than hidden behind "../..".
func (w *Workspace) Rel(abs string) string {
	rel, err := filepath.Rel(w.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

func (w *Workspace) contains(abs string) bool {
	if abs == w.root {
		return true
	}
	prefix := w.root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(abs, prefix)
}

// followSymlinks resolves symlinks component by component, like the kernel
// does, and keeps the non-existing tail as written. filepath.EvalSymlinks
// cannot be used: it fails on the first missing component, and a dangling
// link pointing outside would then be mistaken for a new file inside.
func followSymlinks(abs string) (string, error) {
	vol := filepath.VolumeName(abs)
	cur := vol + string(filepath.Separator)
	queue := splitPath(abs[len(vol):])
	hops := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// Missing (or unreadable) components are kept lexically: the
			// OS cannot traverse them either, so the tool will fail there.
			cur = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("read symlink %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		queue = append(splitPath(target), queue...)
	}
	return cur, nil
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
