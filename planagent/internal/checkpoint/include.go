package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// A copy holds what git tracks at its commit. What the workspace has but
// ignores (.env, node_modules, a virtualenv, generated code) is in no copy
// unless the user names it: in IncludeFile at the top of the workspace,
// or in the config's include_ignored, with gitignore patterns. Only files
// git ignores are taken (a tracked or merely untracked file never is), so
// what is copied in is ignored in the copy too and never enters a task's
// commit.

// IncludeFile lists, in gitignore syntax, the ignored paths of the
// workspace every task copy gets (Claude Code's name for the same idea).
const IncludeFile = ".worktreeinclude"

// Limits of the ignored files a copy gets: each attempt and acceptance
// copies them anew, so more than this is a mistake in the patterns.
const (
	maxIncludeFiles = 200_000
	maxIncludeBytes = 2 << 30
)

// Included is what SetInclude found.
type Included struct {
	Files int   // regular files and links copied into every copy
	Bytes int64 // their size
	// Skipped names what matched but is never copied (a nested
	// repository's .git, a FIFO, socket or device).
	Skipped []string
}

// SetInclude finds the ignored files of the workspace that match the
// patterns of IncludeFile and patterns (gitignore syntax), and makes every
// copy made from now on get them, as they are in the workspace when the
// copy is made. No pattern anywhere: copies get nothing.
func (r *Repo) SetInclude(ctx context.Context, patterns []string) (Included, error) {
	args := []string{"ls-files", "-z", "--others", "--ignored"}
	file := filepath.Join(r.workTree, IncludeFile)
	if fi, err := os.Lstat(file); err == nil {
		if !fi.Mode().IsRegular() {
			return Included{}, fmt.Errorf("%s is not a regular file: make it one, or remove it", file)
		}
		args = append(args, "--exclude-from="+file)
	}
	for _, p := range patterns {
		if p = strings.TrimSpace(p); p != "" {
			args = append(args, "--exclude="+p)
		}
	}
	r.copies.include = nil
	if len(args) == 4 {
		return Included{}, nil
	}
	out, err := r.g.run(ctx, args...)
	if err != nil {
		return Included{}, fmt.Errorf("list the ignored files to copy: %w", err)
	}
	var found Included
	var candidates []string
	for _, p := range splitZ(out) {
		switch {
		case p == "" || strings.HasSuffix(p, "/"):
			// A nested repository: ls-files names its directory only.
			if p != "" {
				found.Skipped = append(found.Skipped, p+" (a nested repository)")
			}
		case hasGitComponent(p):
			found.Skipped = append(found.Skipped, p+" (inside a .git)")
		case r.excluded(p):
		default:
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return found, nil
	}
	// Only what git ignores: a file the patterns name that is merely
	// untracked would be committed by the first task.
	ignored, err := r.g.runIn(ctx, []byte(strings.Join(candidates, "\x00")+"\x00"), "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 { // 1: none is ignored
		return Included{}, fmt.Errorf("check which files git ignores: %w", err)
	}
	for _, p := range splitZ(ignored) {
		if p == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(r.workTree, filepath.FromSlash(p)))
		if err != nil {
			continue // gone meanwhile
		}
		switch {
		case fi.Mode().IsRegular():
			found.Bytes += fi.Size()
		case fi.Mode()&fs.ModeSymlink != 0:
		default:
			found.Skipped = append(found.Skipped, p+" (not a file or link)")
			continue
		}
		r.copies.include = append(r.copies.include, p)
		found.Files++
		if found.Files > maxIncludeFiles || found.Bytes > maxIncludeBytes {
			r.copies.include = nil
			return Included{}, fmt.Errorf("the ignored files to copy into every task's copy (%s, include_ignored) pass %d files or %d GiB: name fewer paths, or make them in each copy with setup_command",
				IncludeFile, maxIncludeFiles, maxIncludeBytes>>30)
		}
	}
	return found, nil
}

func hasGitComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if isDotGit(c) {
			return true
		}
	}
	return false
}

// excluded reports whether the workspace-relative p lies in a path that is
// never part of the workspace (the volumes, with the copies themselves).
func (r *Repo) excluded(p string) bool {
	for _, e := range r.exclude {
		if p == e || strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	if rel, ok := inside(r.workTree, r.gitDir); ok && (p == rel || strings.HasPrefix(p, rel+"/")) {
		return true
	}
	return false
}

// copyIncluded copies the workspace's included ignored files into the
// copy at dir, which holds its commit's tracked files and nothing else.
// A file is copied, never hard-linked: the agent owns its copy and would
// write through a link into the user's file (the kernel's copy_file_range
// under io.Copy shares the blocks where the filesystem can). A link is
// copied as a link, never followed. Nothing is written through a link or
// over a file of the copy: a path whose directory is a link or a file in
// the copy (a task made it one), or that the commit tracks, is left as the
// commit has it. os.Root keeps every write inside the copy.
func (c *copyMaker) copyIncluded(dir string) error {
	if len(c.include) == 0 {
		return nil
	}
	src, err := os.OpenRoot(c.workTree)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer dst.Close()
	made := map[string]bool{} // directories known to be real ones
	for _, p := range c.include {
		if !parentsAreDirs(dst, path.Dir(p), made) {
			continue
		}
		if err := copyOne(src, dst, p); err != nil {
			return fmt.Errorf("copy the ignored file %s into the task's copy: %w", p, err)
		}
	}
	return nil
}

// parentsAreDirs makes the directories of d in root, each a directory of
// its own (not a link): false when one is something else.
func parentsAreDirs(root *os.Root, d string, made map[string]bool) bool {
	if d == "." || made[d] {
		return true
	}
	if !parentsAreDirs(root, path.Dir(d), made) {
		return false
	}
	fi, err := root.Lstat(d)
	switch {
	case err == nil && fi.IsDir():
	case errors.Is(err, fs.ErrNotExist):
		if err := root.Mkdir(d, 0o755); err != nil {
			return false
		}
	default:
		return false
	}
	made[d] = true
	return true
}

// copyOne copies the file or link p from src to dst; a p that exists in
// dst (tracked, or a task's) or is no longer a file or link in src is left.
func copyOne(src, dst *os.Root, p string) error {
	fi, err := src.Lstat(p)
	if err != nil {
		return nil // gone since SetInclude
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := src.Readlink(p)
		if err != nil {
			return nil
		}
		if err := dst.Symlink(target, p); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	in, err := src.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fi.Mode().Perm())
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The mode without the umask, and the time: a build tool that compares
	// times (make, a generated file newer than its source) sees the
	// workspace's.
	if err := dst.Chmod(p, fi.Mode().Perm()); err != nil {
		return err
	}
	return dst.Chtimes(p, fi.ModTime(), fi.ModTime())
}

// IncludedFiles lists the workspace-relative paths SetInclude chose.
func (r *Repo) IncludedFiles() []string { return append([]string(nil), r.copies.include...) }
