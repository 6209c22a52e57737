package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// A copy's files cost the host what they claim, not what the agent paid
// for them: a sparse file (`truncate -s 1G`) takes no disk in the
// container, and then a gigabyte of the host's memory and disk once git
// hashes it and the move writes it out. So the copy's files are judged
// before git reads any of them, on their sizes from lstat (a hole is not
// read), and a copy above a limit fails its attempt, naming the file and
// the setting: a file is never dropped from the commit silently.

// Limits bound what a task's copy may hand the host (SetLimits).
type Limits struct {
	// MaxFileSize is the size, in bytes, above which a file git would
	// read (not ignored, and new or changed) is refused.
	MaxFileSize int64
	// MaxFiles is the number of files (regular files and links, tracked
	// or untracked and not ignored) above which a copy is refused.
	MaxFiles int
}

// The default limits: a file past 100 MiB is not source, and a copy of
// more than 100 000 files is a mistake or an attack on most repositories
// (the setting raises it for the others).
const (
	DefaultMaxFileSize = 100 << 20
	DefaultMaxFiles    = 100_000
)

// SetLimits sets the limits the squashes of copies check, before the
// first squash (like SetInclude: read without a lock after it); a zero
// field keeps its default.
func (r *Repo) SetLimits(l Limits) { r.squashes.limits = l }

// limitsOrDefault are the limits set, each defaulted.
func (sq *squasher) limitsOrDefault() Limits {
	l := sq.limits
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// FileTooLargeError is a file of a task's copy above max_file_size, which
// git would have read (new or changed, not ignored). It was refused by its
// size on disk as the file claims it, before anything read it.
type FileTooLargeError struct {
	Path      string // relative to the copy
	Size, Max int64
	More      int // other files above the limit
}

func (e *FileTooLargeError) Error() string {
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" (and %d more files)", e.More)
	}
	return fmt.Sprintf("the task's file %s is %s%s, above the limit of %s for one file: a task's commit may not hold it "+
		"(a larger file that belongs in the repository needs max_file_size raised: CODEAGENT_MAX_FILE_SIZE or max_file_size in codeagent.yaml)",
		e.Path, sizeText(e.Size), more, sizeText(e.Max))
}

// TooManyFilesError is a task's copy holding more files than max_files
// (tracked, or untracked and not ignored: what its commit would hold).
type TooManyFilesError struct{ Files, Max int }

func (e *TooManyFilesError) Error() string {
	return fmt.Sprintf("the task's copy holds %d files (tracked, or untracked and not ignored), above the limit of %d: a task's commit may not hold them "+
		"(a repository that large needs max_files raised: CODEAGENT_MAX_FILES or max_files in codeagent.yaml)", e.Files, e.Max)
}

// sizeText is a size in bytes with its binary unit for people.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", n, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkLimits refuses the copy at dir, as purge found it, when git would
// read a file above the size limit or take more files than the count
// limit. The walk counted every file, ignored ones too, and listed every
// large one: only then does git say which of them count, so a copy within
// the limits costs no git process here. A large file does not count when
// git ignores it, or when it is tracked with the size the saved index has
// for it (the user's file).
func (sq *squasher) checkLimits(ctx context.Context, dir string, found purged) error {
	l := sq.limitsOrDefault()
	if len(found.large) == 0 && found.files <= l.MaxFiles {
		return nil
	}
	saved := filepath.Join(sq.states.of(dir), "index")
	u, err := sq.user.get(ctx)
	if err != nil {
		return err
	}
	g := git{dir: dir, gitDir: sq.gitDir, workTree: dir, hardened: true, extra: u.copyArgs}
	// The saved index says what is tracked; without one, nothing is.
	env := []string{"GIT_INDEX_FILE=" + saved}
	if len(found.large) > 0 {
		large, err := sq.readLarge(ctx, g, env, saved, found.large)
		if err != nil {
			return err
		}
		if len(large) > 0 {
			sort.Slice(large, func(i, j int) bool { return large[i].rel < large[j].rel })
			return &FileTooLargeError{Path: large[0].rel, Size: large[0].size, Max: l.MaxFileSize, More: len(large) - 1}
		}
	}
	if found.files > l.MaxFiles {
		n, err := countFiles(ctx, g, env)
		if err != nil {
			return fmt.Errorf("count the copy's files: %w", err)
		}
		if n > l.MaxFiles {
			return &TooManyFilesError{Files: n, Max: l.MaxFiles}
		}
	}
	return nil
}

// readLarge is which of the large files git would read.
func (sq *squasher) readLarge(ctx context.Context, g git, env []string, saved string, large []largeFile) ([]largeFile, error) {
	tracked := map[string]gitindex.Entry{}
	entries, _, err := gitindex.Read(saved, sq.store.idSize())
	if err == nil {
		for _, e := range entries {
			tracked[e.Path] = e
		}
	}
	var changed, untracked []largeFile
	for _, f := range large {
		e, ok := tracked[f.rel]
		switch {
		case !ok:
			untracked = append(untracked, f)
		case f.size < 1<<32 && uint32(f.size) == e.Stat[9]:
			// The size the saved index has for it: the user's own file,
			// unchanged, or changed within the size it had (git reads it
			// if its stat data differs, at no more cost than the user's
			// file). Not compared past 4 GiB, which the index's 32 bits
			// of size cannot tell apart.
		default:
			changed = append(changed, f)
		}
	}
	if len(untracked) == 0 {
		return changed, nil
	}
	var in bytes.Buffer
	for _, f := range untracked {
		in.WriteString(f.rel + "\x00")
	}
	// Exit 1: none is ignored.
	out, err := g.runEnv(ctx, env, in.Bytes(), "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(err) != 1 {
		return nil, fmt.Errorf("tell the copy's ignored files: %w", err)
	}
	ignored := map[string]bool{}
	for _, p := range splitZ(out) {
		ignored[p] = true
	}
	for _, f := range untracked {
		if !ignored[f.rel] {
			changed = append(changed, f)
		}
	}
	return changed, nil
}

// countFiles counts the files git would take from the copy: tracked, or
// untracked and not ignored (a tracked file deleted in the copy counts
// too). The list is counted as it streams, never held.
func countFiles(ctx context.Context, g git, env []string) (int, error) {
	c := g.cmdEnv(ctx, env, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		return 0, err
	}
	n := 0
	br := bufio.NewReaderSize(out, 64<<10)
	for {
		chunk, rerr := br.ReadSlice(0)
		if len(chunk) > 0 && chunk[len(chunk)-1] == 0 {
			n++
		}
		if rerr == nil || errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if !errors.Is(rerr, io.EOF) {
			_ = c.Process.Kill()
			_ = c.Wait()
			return 0, rerr
		}
		break
	}
	if err := c.Wait(); err != nil {
		return 0, &Error{Args: []string{"ls-files"}, Stderr: strings.TrimSpace(errb.String()), Err: err}
	}
	return n, nil
}
