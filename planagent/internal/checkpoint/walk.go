package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"
)

// walkCopy calls fn for every entry under dir (its top .git included, as
// ".git"), with its path and its slash-separated path relative to dir,
// in the order the directories list them: a copy is walked on every
// squash and every recycle, and sorting each directory's names cost more
// than reading them (1.3 ms against 0.6 for a thousand files here). fn
// returns whether to descend into a directory; a directory that cannot
// be read below dir (gone meanwhile, unreadable) is passed over, as git
// passes it over too.
func walkCopy(dir string, fn func(p, rel string, d fs.DirEntry) (descend bool, err error)) error {
	entries, err := readDirUnsorted(dir)
	if err != nil {
		return err
	}
	return walkEntries(dir, "", entries, fn)
}

func walkEntries(dir, rel string, entries []fs.DirEntry, fn func(p, rel string, d fs.DirEntry) (bool, error)) error {
	for _, d := range entries {
		p, r := dir+string(filepath.Separator)+d.Name(), d.Name()
		if rel != "" {
			r = rel + "/" + d.Name()
		}
		descend, err := fn(p, r, d)
		if err != nil {
			return err
		}
		if !descend || !d.IsDir() {
			continue
		}
		sub, err := readDirUnsorted(p)
		if err != nil {
			continue
		}
		if err := walkEntries(p, r, sub, fn); err != nil {
			return err
		}
	}
	return nil
}

// readDirUnsorted is os.ReadDir without the sort.
func readDirUnsorted(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
