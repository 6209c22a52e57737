// Package safefs writes, moves and removes files beneath one directory (the
// volumes root) without following a symbolic link anywhere below it.
//
// The volumes tree is shared with coding agents that planagent does not
// trust: one that plants context/task -> /home/you would have planagent's
// path-based writes (os.MkdirAll, os.Rename, os.RemoveAll) land in, and move
// files out of, a directory of the host. A Root is opened once on the
// volumes root and every operation goes through directory descriptors
// opened from it: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the
// kernel has it (Linux 5.6), else one component at a time with
// O_NOFOLLOW|O_DIRECTORY. A link or any other non-directory standing where a
// directory belongs is removed (never followed) and replaced by a real
// directory, with a warning naming it; ".." is refused.
//
// The root's own path is trusted and resolved as usual (it may itself be a
// link, as /tmp is on macOS): it is the operator's choice, not the agents'.
//
// Only Unix systems are supported, as the rest of planagent.
package safefs
