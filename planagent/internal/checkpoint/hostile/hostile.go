// Package hostile holds what an agent inside its container can leave in its
// copy of the workspace to make the host's git run a program or write
// outside the copy: the escapes of an adversarial audit, as shell scripts
// an agent would run with shell_exec in its copy. The checkpoint tests run
// them against the copy-handling code directly, the end-to-end tests from
// inside a container; after either, no marker may exist on the host and the
// user's repository must be as it was.
package hostile

import "strings"

// Payload is one escape attempt. Script runs in the copy's root with
// /bin/sh (busybox's will do: no git needed); MARKER in it is a host path
// that only a program run on the host can create, GITDIR the checkpoint
// repository's git directory (the user's .git, or the shadow repository).
type Payload struct {
	Name, Script string
}

// Script is p's script for a marker and a git directory.
func (p Payload) For(marker, gitDir string) string {
	return strings.NewReplacer("MARKER", marker, "GITDIR", gitDir).Replace(p.Script)
}

// evilCommon makes .git/evil a repository whose config is config and points
// the copy's .git/commondir at it: git then reads that config instead of
// .git/config, whatever the host writes there.
func evilCommon(config string) string {
	return "mkdir -p .git/evil/objects .git/evil/refs/heads && printf 'ref: refs/heads/x\\n' > .git/evil/HEAD && printf '" +
		config + "' > .git/evil/config && echo evil > .git/commondir"
}

// All are the payloads, one per escape.
var All = []Payload{
	{"commondir-filter", evilCommon(`[core]\n\trepositoryformatversion = 0\n[filter "evil"]\n\tsmudge = touch MARKER; cat\n\tclean = touch MARKER; cat\n`) +
		" && printf '* filter=evil\\n' > .gitattributes"},
	{"commondir-uploadpack-ext-url", evilCommon(`[core]\n\trepositoryformatversion = 0\n[uploadpack]\n\tpackObjectsHook = touch MARKER;\n[protocol "ext"]\n\tallow = always\n[remote "origin"]\n\turl = ext::sh -c touch%% MARKER\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`)},
	{"commondir-include-path", evilCommon(`[core]\n\trepositoryformatversion = 0\n[include]\n\tpath = ../../evil.inc\n`) +
		" && printf '[filter \"evil\"]\\n\\tsmudge = touch MARKER; cat\\n\\tclean = touch MARKER; cat\\n' > evil.inc && printf '* filter=evil\\n' > .gitattributes"},
	{"commondir-ssh-command", evilCommon(`[core]\n\trepositoryformatversion = 0\n\tsshCommand = touch MARKER; false\n[remote "origin"]\n\turl = ssh://localhost/x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`)},
	{"nested-repo-clean-filter", "mkdir -p sub/.git/objects sub/.git/refs/heads && printf 'ref: refs/heads/main\\n' > sub/.git/HEAD && " +
		"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n[filter \"evil\"]\\n\\tclean = touch MARKER; cat\\n\\tsmudge = touch MARKER; cat\\n' > sub/.git/config && " +
		"printf '* filter=evil\\n' > sub/.gitattributes && echo data > sub/file.txt && printf 'sub/* filter=evil\\n' >> .gitattributes"},
	{"nested-gitfile-to-user-repo", "mkdir -p sub2 && printf 'gitdir: GITDIR\\n' > sub2/.git && echo data > sub2/file.txt"},
	{"symlinked-git-config", "rm -f .git/config && ln -s MARKER .git/config"},
	{"symlinked-git", "rm -rf .git && ln -s GITDIR .git"},
	{"fifo-git-config", "rm -f .git/config && mkfifo .git/config"},
	{"fifo-packed-refs", "rm -f .git/packed-refs && mkfifo .git/packed-refs"},
	{"fifo-in-tree", "mkfifo pipe"},
	{"stale-index-lock", "touch .git/index.lock"},
	{"gitmodules-update-command", "printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = ./x\\n\\tupdate = !touch MARKER\\n' > .gitmodules"},
	// The host rewrites a recycled copy's git files in place: through a
	// second link it would write into another file (the user's config,
	// where the copy and the repository share a file system).
	{"hardlinked-git-files", "echo kept > kept.txt && for f in .git/config .git/HEAD .git/index .git/packed-refs .git/objects/pack/pack-*; do " +
		"rm -f \"$f\"; ln GITDIR/config \"$f\" 2>/dev/null || ln kept.txt \"$f\"; done"},
	// A pack changed with its size and modification time kept: only its
	// change time tells, and it must be written again.
	{"pack-rewritten-same-size-and-mtime", "for f in .git/objects/pack/pack-*; do cp -p \"$f\" .git/ref && " +
		"printf XXXX | dd of=\"$f\" bs=1 conv=notrunc 2>/dev/null && touch -r .git/ref \"$f\"; done"},
	{"hooks-and-fsmonitor", "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch MARKER\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && " +
		"printf '[core]\\n\\tfsmonitor = touch MARKER; false\\n\\thooksPath = .git/hooks\\n' >> .git/config"},
	// A repository in a directory left with search permission only: a
	// host that is not root could not list it, while its git still
	// reaches hid/.git and would run the filter (or commit a gitlink).
	{"unreadable-dir-nested-repo", "mkdir -p hid/.git/objects hid/.git/refs/heads && printf 'ref: refs/heads/main\\n' > hid/.git/HEAD && " +
		"printf '[core]\\n\\trepositoryformatversion = 0\\n[filter \"evil\"]\\n\\tclean = touch MARKER; cat\\n\\tsmudge = touch MARKER; cat\\n' > hid/.git/config && " +
		"printf '* filter=evil\\n' > hid/.gitattributes && echo data > hid/file.txt && chmod 0311 hid"},
	// Names HFS+ and NTFS open as .git: committed, a checkout on a Mac
	// or on Windows writes into the repository's own .git (git fsck
	// --strict: hasDotgit).
	{"hfs-dotgit-zero-width", "mkdir -p 'y/.git\u200c/objects' 'y/.git\u200c/refs/heads' && printf 'ref: refs/heads/main\\n' > 'y/.git\u200c/HEAD' && " +
		"printf '[core]\\n\\tfsmonitor = touch MARKER; false\\n' > 'y/.git\u200c/config' && echo data > y/file.txt"},
	{"ntfs-dotgit-short-name", "mkdir -p 'w/git~1/hooks' && printf '#!/bin/sh\\ntouch MARKER\\n' > 'w/git~1/hooks/post-checkout' && echo data > w/file.txt"},
	// The copy's git directory moved away whole, a config of the agent's
	// added: committed as plain files, a repository of the agent's in the
	// user's tree.
	{"moved-away-git-dir", "cp -r .git .git.orig && printf '[core]\\n\\tfsmonitor = touch MARKER; false\\n' >> .git.orig/config"},
	// A gigabyte that takes no disk in the container (a hole): judged by
	// its size, the task fails before git reads it (FileTooLargeError).
	{"sparse-1g-file", "dd if=/dev/zero of=big.bin bs=1 count=1 seek=1073741823 2>/dev/null"},
}

// Refusal is what the error of a payload's task says when the task fails
// by design (its copy is refused), "" when the task completes with what
// the payload planted removed.
func (p Payload) Refusal() string {
	switch p.Name {
	case "gitmodules-update-command":
		return ".gitmodules is refused"
	case "sparse-1g-file":
		return "above the limit of"
	}
	return ""
}
