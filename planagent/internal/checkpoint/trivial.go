package checkpoint

import (
	"encoding/hex"
	"slices"
	"strings"
)

// A fan-out's merge onto a head that moved since the attempt's copy is,
// most of the time, of changes that do not meet: the attempt added or
// changed some files, the merges before it others. Then the merged tree is
// the head's with the attempt's entries put in, written here (the trees
// on the changed paths) instead of by a `git merge-tree` process. Anything
// else goes to git: a path both sides changed, one inside the other, and
// any removal on either side (git's rename detection may move the other
// side's files after it, or call it a conflict).

// mergeReach is how many first parents back from the head a merge's base
// may lie for the merge to be written here: the merges of a fan-out of
// that many tasks from one base.
const mergeReach = 4096

// trivialMerge returns the tree of commit's changes over base applied onto
// onto, its new trees written into the objects directory dir, or ok false
// when the merge is not one of disjoint additions and changes, or base
// (commit's parent) is not a recent first-parent ancestor of onto (then
// git's merge base could be another).
func (r *Repo) trivialMerge(dir, base, commit, onto string) (tree string, ok bool, err error) {
	if reached, err := r.reaches(onto, base, mergeReach); err != nil || !reached {
		return "", false, err
	}
	bt, err := r.commitTree(base)
	if err != nil {
		return "", false, err
	}
	ct, err := r.commitTree(commit)
	if err != nil {
		return "", false, err
	}
	ot, err := r.commitTree(onto)
	if err != nil {
		return "", false, err
	}
	mineFrom, mine := map[string]entry{}, map[string]entry{}
	if err := r.diffTree("", bt, ct, mineFrom, mine, nil); err != nil {
		return "", false, err
	}
	theirsFrom, theirs := map[string]entry{}, map[string]entry{}
	if err := r.diffTree("", bt, ot, theirsFrom, theirs, nil); err != nil {
		return "", false, err
	}
	if removes(mineFrom, mine) || removes(theirsFrom, theirs) {
		return "", false, nil
	}
	for p := range mine {
		if _, both := theirs[p]; both || meets(p, theirs) {
			return "", false, nil
		}
	}
	tree, err = r.editTree(dir, ot, mine, nil)
	return tree, err == nil, err
}

// removes reports whether a side's diff removes a path (an entry before,
// none after).
func removes(from, to map[string]entry) bool {
	for p := range from {
		if _, ok := to[p]; !ok {
			return true
		}
	}
	return false
}

// meets reports whether path p lies inside a path of other or one of
// other's paths inside p.
func meets(p string, other map[string]entry) bool {
	for q := range other {
		if strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// editTree writes the tree id with the files of set put in (paths
// relative to it; new directories made) or, where an entry has no blob,
// taken out (a directory left empty goes: git keeps no empty tree but the
// top one), and returns the new tree's id; with wrote, the id of every tree
// it wrote is added to it.
func (r *Repo) editTree(dir, id string, set map[string]entry, wrote *[]string) (string, error) {
	tree, empty, err := r.editSubtree(dir, id, set, wrote)
	if err != nil || !empty {
		return tree, err
	}
	tree, err = r.writeTree(dir, nil)
	if err == nil && wrote != nil {
		*wrote = append(*wrote, tree)
	}
	return tree, err
}

// editSubtree is editTree; an empty result is not written (empty true).
func (r *Repo) editSubtree(dir, id string, set map[string]entry, wrote *[]string) (string, bool, error) {
	entries, err := r.treeEntries(id)
	if err != nil {
		return "", false, err
	}
	sub := map[string]map[string]entry{}
	for p, e := range set {
		name, rest, deeper := strings.Cut(p, "/")
		if !deeper {
			if e.blob == "" {
				delete(entries, name)
			} else {
				entries[name] = treeEntry{mode: e.mode, id: e.blob}
			}
			continue
		}
		if sub[name] == nil {
			sub[name] = map[string]entry{}
		}
		sub[name][rest] = e
	}
	for name, s := range sub {
		old := ""
		e, ok := entries[name]
		if ok && e.mode == "40000" {
			old = e.id
		} else if ok && !hasFile(s) {
			continue // a file at the name, and only removals below it
		}
		nid, empty, err := r.editSubtree(dir, old, s, wrote)
		if err != nil {
			return "", false, err
		}
		if empty {
			delete(entries, name)
		} else {
			entries[name] = treeEntry{mode: "40000", id: nid}
		}
	}
	if len(entries) == 0 {
		return "", true, nil
	}
	tree, err := r.writeTree(dir, entries)
	if err == nil && wrote != nil {
		*wrote = append(*wrote, tree)
	}
	return tree, false, err
}

// hasFile reports whether set puts any file in.
func hasFile(set map[string]entry) bool {
	for _, e := range set {
		if e.blob != "" {
			return true
		}
	}
	return false
}

// writeTree writes a tree object of entries as git does: sorted by name,
// a directory's name as if a slash followed it.
func (r *Repo) writeTree(dir string, entries map[string]treeEntry) (string, error) {
	// Each name's sort key made once: a key made in the comparison cost
	// more than the rest of the tree's writing at a thousand entries.
	type named struct {
		key, name string
		e         treeEntry
	}
	list := make([]named, 0, len(entries))
	size := 0
	for n, e := range entries {
		k := n
		if e.mode == "40000" {
			k = n + "/"
		}
		list = append(list, named{key: k, name: n, e: e})
		size += len(e.mode) + len(n) + 2 + len(e.id)/2
	}
	slices.SortFunc(list, func(a, b named) int { return strings.Compare(a.key, b.key) })
	b := make([]byte, 0, size)
	for _, x := range list {
		b = append(b, x.e.mode...)
		b = append(b, ' ')
		b = append(b, x.name...)
		b = append(b, 0)
		var err error
		if b, err = hex.AppendDecode(b, []byte(x.e.id)); err != nil {
			return "", err
		}
	}
	id, err := writeLoose(dir, r.objectFormat, "tree", b)
	if err == nil {
		r.treeData.put(id, b)
	}
	return id, err
}

// reaches reports whether ancestor is at most steps first parents back
// from commit. The parents of the commits this process wrote, and of those
// read once, are remembered: a fan-out's base lies one more merge back at
// each merge, and walking there through cat-file each time would cost a
// round trip per merge before it.
func (r *Repo) reaches(commit, ancestor string, steps int) (bool, error) {
	for range steps {
		if commit == ancestor {
			return true, nil
		}
		parent, err := r.firstParent(commit)
		if err != nil || parent == "" {
			return false, err
		}
		commit = parent
	}
	return commit == ancestor, nil
}

// firstParent is commit's first parent, "" for a root commit or what is
// not a commit.
func (r *Repo) firstParent(commit string) (string, error) {
	r.msgMu.Lock()
	parent, ok := r.parents[commit]
	r.msgMu.Unlock()
	if ok {
		return parent, nil
	}
	o, err := r.cat.get(commit)
	if err != nil {
		return "", err
	}
	if o.missing || o.typ != "commit" {
		return "", nil
	}
	for _, line := range strings.Split(string(o.data), "\n") {
		if p, ok := strings.CutPrefix(line, "parent "); ok {
			parent = p
			break
		}
		if line == "" {
			break
		}
	}
	r.rememberParent(commit, parent)
	return parent, nil
}

func (r *Repo) rememberParent(commit, parent string) {
	r.msgMu.Lock()
	defer r.msgMu.Unlock()
	if r.parents == nil || len(r.parents) >= mergeReach {
		r.parents = map[string]string{}
	}
	r.parents[commit] = parent
}
