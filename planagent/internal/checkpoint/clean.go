package checkpoint

import (
	"context"
	"io/fs"
	"path/filepath"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// After its checkout a recycled copy holds, besides its commit's files,
// whatever the agent left that git does not track (`git clean -ffdx`
// would remove it). The index checkout just wrote says what is tracked;
// one walk removes the rest, without a git process. An index this does
// not read (version 4's compressed paths) falls back to git clean.

// cleanCopy removes from the copy at dir everything its index does not
// track, as `git clean -ffdx` does; the copy's own .git stays.
func (c *copyMaker) cleanCopy(ctx context.Context, dir string) error {
	entries, _, err := gitindex.Read(filepath.Join(dir, ".git", "index"), c.store.idSize())
	if err != nil {
		cg := git{dir: dir, gitDir: filepath.Join(dir, ".git"), workTree: dir, hardened: true}
		_, err := cg.run(ctx, "clean", "-q", "-ffdx")
		return err
	}
	tracked := make(map[string]bool, len(entries))
	dirs := map[string]bool{}
	for _, e := range entries {
		p := e.Path
		tracked[p] = true
		for d := filepath.ToSlash(filepath.Dir(p)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if dirs[d] {
				break
			}
			dirs[d] = true
		}
	}
	return walkCopy(dir, func(p, rel string, d fs.DirEntry, _ int64) (bool, error) {
		switch {
		case rel == ".git":
			return false, nil
		case tracked[rel]:
			return false, nil // a file, or a submodule's directory
		case d.IsDir() && dirs[rel]:
			return true, nil
		}
		return false, removeAll(p)
	})
}
