package repomap

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// A cached file is reused when its path, mtime and size are what they were
// under the same root. A copy of the tree (each attempt works in its own
// checkout, at its own path, with files written at their own times) has
// none of that in common with the cache; what it shares is content, and
// git's index says what each file holds without reading it: the object id
// of every file whose stat data is the index's, as git itself trusts it.
// A file the index does not vouch for (changed, racily clean, untracked,
// no index at all) is told by its stat data alone, as before.

// tracked is what a workspace's git index vouches for.
type tracked struct {
	entries map[string]gitindex.Entry
	written syscall.Timespec // the index's mtime: entries as new are racy
}

// readTracked reads the index of the repository whose work tree is root
// (a .git directory, or a .git file naming the git directory); nil when
// there is none this can read, which only costs parsing.
func readTracked(root string) *tracked {
	gitDir := filepath.Join(root, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return nil
	}
	if fi.Mode().IsRegular() { // a worktree or submodule: "gitdir: PATH"
		data, err := os.ReadFile(gitDir)
		if err != nil || !strings.HasPrefix(string(data), "gitdir: ") {
			return nil
		}
		gitDir = strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir: "))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
	} else if !fi.IsDir() {
		return nil
	}
	entries, written, _, err := gitindex.ReadAny(filepath.Join(gitDir, "index"))
	if err != nil {
		return nil
	}
	t := &tracked{entries: make(map[string]gitindex.Entry, len(entries)), written: written}
	for _, e := range entries {
		if e.Flags&gitindex.FlagStage == 0 {
			t.entries[e.Path] = e
		}
	}
	return t
}

// id is the object id the index gives the file rel whose stat is fi, or
// "" when it does not vouch for the file's content.
func (t *tracked) id(rel string, fi fs.FileInfo) string {
	if t == nil {
		return ""
	}
	e, ok := t.entries[rel]
	if !ok || gitindex.Racy(e.Stat, t.written) {
		return ""
	}
	if st, ok := gitindex.StatData(fi); !ok || st != e.Stat {
		return ""
	}
	return string(e.OID)
}
