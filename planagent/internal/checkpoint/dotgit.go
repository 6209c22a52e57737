package checkpoint

import (
	"strings"
	"unicode/utf8"
)

// A file system that folds names can open the .git directory under a name
// other than ".git": HFS+ folds case and ignores some Unicode code points
// altogether, NTFS folds case, drops trailing spaces and periods, stops a
// name at a stream's ':' and answers to the 8.3 short name GIT~1. Git
// refuses such paths in an index when core.protectHFS and core.protectNTFS
// are on, and `git fsck` flags a tree holding one (hasDotgit): on a Mac or
// on Windows a checkout of it would write into the repository's own
// .git. The copies' purge takes every such name for .git, so a task's
// commit never holds one.

// isDotGit reports whether the file name (one path component) is .git to
// git on some file system: HFS+ (isHFSDotGit) or NTFS (isNTFSDotGit).
func isDotGit(name string) bool {
	return isHFSDotGit(name) || isNTFSDotGit(name)
}

// hfsIgnored are the code points HFS+ leaves out of a name when it
// compares names: joiners, direction marks and embeddings, the deprecated
// shaping controls and the byte order mark.
func hfsIgnored(c rune) bool {
	switch {
	case c >= 0x200c && c <= 0x200f, c >= 0x202a && c <= 0x202e, c >= 0x206a && c <= 0x206f, c == 0xfeff:
		return true
	}
	return false
}

// isHFSDotGit reports whether HFS+ takes name for ".git": once the
// ignored code points are left out, it is ".git" in any case of its ASCII
// letters. Git reads a byte sequence that is not UTF-8 as the end of the
// name, so ".git" followed by one is taken for ".git" too (git refuses
// it, and so must the purge), while one before ".git" is complete is not.
func isHFSDotGit(name string) bool {
	const want = ".git"
	i := 0
	for len(name) > 0 {
		c, size := utf8.DecodeRuneInString(name)
		name = name[size:]
		switch {
		case c == utf8.RuneError && size == 1:
			return i == len(want)
		case hfsIgnored(c):
			continue
		case i == len(want) || c >= utf8.RuneSelf || asciiLower(byte(c)) != want[i]:
			return false
		}
		i++
	}
	return i == len(want)
}

// isNTFSDotGit reports whether NTFS takes name for ".git": a name there
// ends at a ':' (what follows names a stream of the file), trailing spaces
// and periods are dropped, case is folded, and "git~1" is the 8.3 short
// name of ".git". A backslash separates directories on Windows, so each
// part of a name between backslashes counts as a name of its own.
func isNTFSDotGit(name string) bool {
	for part := range strings.SplitSeq(name, `\`) {
		part, _, _ = strings.Cut(part, ":")
		part = strings.TrimRight(part, " .")
		if asciiEqualFold(part, ".git") || asciiEqualFold(part, "git~1") {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether s is lower with any of its ASCII letters
// in upper case (only ASCII letters fold: a Unicode folding such as the
// Kelvin sign's to k is not one these file systems make).
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if asciiLower(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
