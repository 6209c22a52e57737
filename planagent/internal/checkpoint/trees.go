package checkpoint

import (
	"encoding/hex"
	"slices"
	"strings"
)

// Trees written here from a set of entries over a tree: the squash's
// (indexTree), from the entries git add changed.

// editTree writes the tree id with the files of set put in (paths
// relative to it; new directories made) or, where an entry has no blob,
// taken out (a directory left empty goes: git keeps no empty tree but the
// top one), and returns the new tree's id; with wrote, the id of every tree
// it wrote is added to it.
func (ob *objectStore) editTree(dir, id string, set map[string]entry, wrote *[]string) (string, error) {
	tree, empty, err := ob.editSubtree(dir, id, set, wrote)
	if err != nil || !empty {
		return tree, err
	}
	tree, err = ob.writeTree(dir, nil)
	if err == nil && wrote != nil {
		*wrote = append(*wrote, tree)
	}
	return tree, err
}

// editSubtree is editTree; an empty result is not written (empty true).
func (ob *objectStore) editSubtree(dir, id string, set map[string]entry, wrote *[]string) (string, bool, error) {
	entries, err := ob.treeEntries(id)
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
		nid, empty, err := ob.editSubtree(dir, old, s, wrote)
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
	tree, err := ob.writeTree(dir, entries)
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
func (ob *objectStore) writeTree(dir string, entries map[string]treeEntry) (string, error) {
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
	id, err := writeLoose(dir, ob.objectFormat, "tree", b)
	if err == nil {
		ob.treeData.put(id, b)
	}
	return id, err
}

// firstParent is commit's first parent, "" for a root commit or what is
// not a commit.
func (ob *objectStore) firstParent(commit string) (string, error) {
	ob.msgMu.Lock()
	parent, ok := ob.parents[commit]
	ob.msgMu.Unlock()
	if ok {
		return parent, nil
	}
	o, err := ob.cat.get(commit)
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
	ob.rememberParent(commit, parent)
	return parent, nil
}

// parentsKept bounds the first parents remembered.
const parentsKept = 4096

func (ob *objectStore) rememberParent(commit, parent string) {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	if ob.parents == nil || len(ob.parents) >= parentsKept {
		ob.parents = map[string]string{}
	}
	ob.parents[commit] = parent
}

// remember keeps the message of a commit Squash made, for its Apply (one
// git log fewer per merge onto a moved head). Bounded: a run's pending
// merges are few, and one forgotten is read from git again.
func (ob *objectStore) remember(commit, msg string) {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	if ob.msgs == nil || len(ob.msgs) >= 256 {
		ob.msgs = map[string]string{}
	}
	ob.msgs[commit] = msg
}

func (ob *objectStore) message(commit string) (string, bool) {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	msg, ok := ob.msgs[commit]
	return msg, ok
}

// isPlain reports whether commit is known to have no submodule
// (checkSubmodules found none, or it was made from such commits here).
func (ob *objectStore) isPlain(commit string) bool {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	return ob.plain[commit]
}

// isID reports whether s is an object id (full length, lower-case hex) of
// the repository's format, not a name that may come to mean another.
func (ob *objectStore) isID(s string) bool {
	if len(s) != 2*ob.idSize() || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func (ob *objectStore) markPlain(commit string) {
	ob.msgMu.Lock()
	defer ob.msgMu.Unlock()
	if ob.plain == nil || len(ob.plain) >= 4096 {
		ob.plain = map[string]bool{}
	}
	ob.plain[commit] = true
}
