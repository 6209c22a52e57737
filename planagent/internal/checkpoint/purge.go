package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// purgeOptions says what purge does besides removing.
type purgeOptions struct {
	// root removes the copy's own .git too.
	root bool
	// tracked, when set, reports whether a path (relative to the copy)
	// is tracked at the copy's base: a git directory the user's
	// repository tracks (a test fixture) is the user's, not one the agent
	// moved away, and stays.
	tracked func(rel string) bool
	// maxFile, when positive, has purge count the files and list those
	// larger (checkLimits judges them).
	maxFile int64
}

// purged is what purge did and found.
type purged struct {
	removed []string
	// files are the regular files and links left (ignored ones
	// included), large the regular files above maxFile: counted with
	// purgeOptions.maxFile only.
	files int
	large []largeFile
}

// largeFile is a file of a copy above the size limit.
type largeFile struct {
	rel  string
	size int64
}

// purge removes from the copy at dir what the host must never read: every
// nested .git (file, directory or link: a repository the agent made or
// cloned, whose files are then taken as plain files), every name a file
// system that folds names would take for .git (isDotGit), every directory
// git would take for a git directory (gitDirLike: the agent's .git moved
// away, a bare repository), every FIFO, socket or device, and with
// o.root the copy's own .git too. It names what it removed, and with
// o.maxFile counts what is left.
func purge(dir string, o purgeOptions) (purged, error) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return purged{}, fmt.Errorf("%s is not a directory", dir)
	}
	var found purged
	removed := &found.removed
	// topIsGitDir: the copy itself holds what makes a git directory.
	topIsGitDir := false
	w := copyWalk{sizes: o.maxFile > 0}
	w.listed = func(p, rel string, entries []fs.DirEntry) (bool, error) {
		if !gitDirLike(entries) || (o.tracked != nil && o.tracked(join(rel, "HEAD"))) {
			return true, nil
		}
		if rel == "" {
			// Not removed (the copy itself): its HEAD and commondir go
			// as they are visited, and without them it is none.
			topIsGitDir = true
			return true, nil
		}
		if err := removeAll(p); err != nil {
			return false, err
		}
		*removed = append(*removed, fmt.Sprintf("the git directory %s, moved away from .git, is not taken (a repository's HEAD, objects and refs: removed with what it holds)", rel))
		return false, nil
	}
	w.visit = func(p, rel string, d fs.DirEntry, size int64) (bool, error) {
		switch {
		case rel == ".git":
			if o.root {
				if err := removeAll(p); err != nil {
					return false, err
				}
			}
			return false, nil
		case strings.EqualFold(d.Name(), ".git"):
			if err := removeAll(p); err != nil {
				return false, err
			}
			*removed = append(*removed, fmt.Sprintf("the nested repository's %s (its files are taken as plain files)", rel))
			return false, nil
		case isDotGit(d.Name()):
			if err := removeAll(p); err != nil {
				return false, err
			}
			*removed = append(*removed, fmt.Sprintf("%s, which HFS+ or NTFS would take for .git (removed with what it holds)", rel))
			return false, nil
		case topIsGitDir && (rel == "HEAD" || rel == "commondir"):
			if err := removeAll(p); err != nil {
				return false, err
			}
			*removed = append(*removed, fmt.Sprintf("%s at the top of the copy (beside objects and refs, git would take the workspace for a git directory)", rel))
			return false, nil
		case d.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0:
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return false, err
			}
			*removed = append(*removed, fmt.Sprintf("the special file %s (not a file, directory or link)", rel))
		case d.IsDir():
		case o.maxFile > 0:
			found.files++
			if size > o.maxFile {
				found.large = append(found.large, largeFile{rel: rel, size: size})
			}
		}
		return true, nil
	}
	err := w.walk(dir)
	sort.Strings(found.removed) // the walk's order is the directories'
	return found, err
}

// gitDirLike reports whether a directory with entries is one git would
// take for a git directory (its is_git_directory): a HEAD, and objects and
// refs beside it or in the directory its commondir names. Neither the
// HEAD's content nor the others' types are looked at: git is satisfied by
// a link or an executable file where a directory is expected, and a
// directory like this one that git refuses today may be accepted by
// another version.
func gitDirLike(entries []fs.DirEntry) bool {
	var head, objects, refs, common bool
	for _, e := range entries {
		switch e.Name() {
		case "HEAD":
			head = true
		case "objects":
			objects = true
		case "refs":
			refs = true
		case "commondir":
			common = true
		}
	}
	return head && (common || (objects && refs))
}

// trackedAt is purgeOptions.tracked for the copy whose saved index is
// idx: read only once a path is asked about (a git directory found,
// which is rare), and nothing is tracked when it cannot be read.
func trackedAt(idx string, idLen int) func(rel string) bool {
	var paths map[string]bool
	return func(rel string) bool {
		if paths == nil {
			paths = map[string]bool{}
			if entries, _, err := gitindex.Read(idx, idLen); err == nil {
				for _, e := range entries {
					paths[e.Path] = true
				}
			}
		}
		return paths[filepath.ToSlash(rel)]
	}
}
