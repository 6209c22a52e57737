package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// openCheckpoints opens the checkpoint repository of the workspace: the
// user's git repository when the workspace is the top of one, otherwise a
// shadow repository under the volumes.
func (s *session) openCheckpoints(ctx context.Context) (*checkpoint.Repo, error) {
	ws := s.layout.Workspace()
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(s.layout.Root, "checkpoints"), ws), []string{s.layout.Root})
	if err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	// Copies thrown away are kept for the next attempts (one per parallel
	// task and one for acceptance), so a copy costs the files that changed.
	repo.SetPool(checkpoint.ShadowDir(filepath.Join(s.layout.Attempts(), ".pool"), repo.GitDir()), max(1, s.cfg.Parallel)+1)
	// What a task's copy may commit (config validated it: a bad size
	// cannot get here, and 0 would keep the default).
	maxFile, _ := s.cfg.MaxFileBytes()
	repo.SetLimits(checkpoint.Limits{MaxFileSize: maxFile, MaxFiles: s.cfg.MaxFiles})
	return repo, nil
}

// includeIgnored makes every copy of the run get the workspace's ignored
// files that .worktreeinclude and include_ignored name, and says how many
// in one line. Before any copy is made (the prewarm).
func (s *session) includeIgnored(ctx context.Context, repo *checkpoint.Repo, w io.Writer) error {
	found, err := repo.SetInclude(ctx, s.cfg.IncludeIgnored)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if found.Files > 0 {
		files, are := fmt.Sprintf("%d ignored files", found.Files), "are"
		if found.Files == 1 {
			files, are = "1 ignored file", "is"
		}
		fmt.Fprintf(w, "checkpoints: %s (%s) from %s and include_ignored %s copied into every task's copy\n",
			files, sizeOf(found.Bytes), checkpoint.IncludeFile, are)
	}
	for _, sk := range found.Skipped {
		fmt.Fprintf(w, "checkpoints: not copied into the tasks' copies: %s\n", sk)
	}
	return nil
}

// sizeOf is a byte count for people.
func sizeOf(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// prewarm makes the attempts' first copies of commit in the background,
// while the planner thinks and the plan awaits confirmation: on a large
// tree each costs seconds, and the run's first attempts (one per parallel
// task, one for acceptance) would otherwise wait for them one by one. The
// returned stop ends it and waits: stop(true) keeps the copies for the run,
// stop(false) deletes them (the run does not start). Only the first call
// counts.
func (s *session) prewarm(ctx context.Context, repo *checkpoint.Repo, commit string) func(keep bool) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := repo.Prewarm(ctx, commit)
		if err != nil {
			// Not fatal: the attempts make their copies themselves.
			s.logger.Warn("prepare the attempts' copies ahead", "err", err)
		}
		s.logger.Debug("attempts' copies prepared ahead", "copies", n)
	}()
	var once sync.Once
	return func(keep bool) {
		once.Do(func() {
			cancel()
			<-done
			if !keep {
				if err := repo.DrainPool(); err != nil {
					s.logger.Warn("remove the copies prepared ahead", "err", err)
				}
			}
		})
	}
}

// refuseDirty refuses a workspace with uncommitted work: a run commits each
// task on top of HEAD and moves the workspace's files with it, so the
// user's own changes are never mixed in or overwritten. The config file
// being read (./codeagent.yaml in the project, say) is not work: it is
// left out, with a word on ignoring it.
func (s *session) refuseDirty(ctx context.Context, repo *checkpoint.Repo) error {
	dirty, err := repo.Dirty(ctx)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if s.file != "" {
		kept := dirty[:0]
		for _, p := range dirty {
			if samePath(filepath.Join(repo.WorkTree(), filepath.FromSlash(p)), s.file) {
				fmt.Fprintf(s.f.IO.Err, "checkpoints: the config file %s is not committed; it is left out of the tasks' copies and commits (add it to .gitignore to say so)\n", p)
				continue
			}
			kept = append(kept, p)
		}
		dirty = kept
	}
	if len(dirty) == 0 {
		return nil
	}
	shown := dirty
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(dirty)-10))
	}
	return cmdutil.UsageError(fmt.Errorf("the workspace %s has uncommitted changes: %s. A run commits each task on top of HEAD and never touches your own work: commit them or `git stash -u` them first (or run on a clean checkout)",
		repo.WorkTree(), strings.Join(shown, ", ")))
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// refuseUnwritable refuses a workspace, or the git directory its
// checkpoints commit to (git mode; a shadow repository lies in the volumes,
// which are checked when made), that this process cannot write: each
// completed task is merged into them, so the run would plan (a paid call)
// and then stop at its first copy or merge. access(2) answers as the writes
// would, for a read-only mount too.
func refuseUnwritable(repo *checkpoint.Repo) error {
	dirs := [][2]string{{"workspace", repo.WorkTree()}}
	if repo.Mode() == "git" {
		dirs = append(dirs, [2]string{"git directory", repo.GitDir()})
	}
	for _, d := range dirs {
		if err := unix.Access(d[1], unix.W_OK); err != nil {
			return cmdutil.UsageError(fmt.Errorf("the %s %s is not writable (%w): planagent writes every completed task there; "+
				"make it writable (chmod -R u+w %s, or remount it read-write) or run on a writable copy of it",
				d[0], d[1], err, d[1]))
		}
	}
	return nil
}

// startCheckpoints prepares the checkpoints of a new run and says in one
// line where they go.
func (s *session) startCheckpoints(ctx context.Context, w io.Writer) (*checkpoint.Repo, *runrecord.Checkpoints, error) {
	repo, err := s.openCheckpoints(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseUnwritable(repo); err != nil {
		return nil, nil, err
	}
	if err := repo.Snapshot(ctx); err != nil {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if err := s.refuseDirty(ctx, repo); err != nil {
		return nil, nil, err
	}
	if err := repo.CheckFilters(ctx); err != nil {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if err := s.includeIgnored(ctx, repo, w); err != nil {
		return nil, nil, err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if repo.Mode() == "git" {
		branch := repo.Branch()
		if branch == "" {
			branch = "detached HEAD"
		}
		fmt.Fprintf(w, "checkpoints: each task becomes one commit on %s (git repository %s)\n", branch, repo.WorkTree())
	} else {
		fmt.Fprintf(w, "checkpoints: each task becomes one commit in the shadow repository %s (the workspace is not a git repository and gets no .git)\n", repo.GitDir())
	}
	if subs, err := repo.Submodules(ctx, head); err == nil && len(subs) > 0 {
		if len(subs) > 5 {
			subs = append(subs[:5:5], fmt.Sprintf("and %d more", len(subs)-5))
		}
		fmt.Fprintf(w, "checkpoints: submodules are not copied into the tasks' workspaces and stay as they are: %s\n", strings.Join(subs, ", "))
	}
	return repo, &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}, nil
}

// resumeCheckpoints reopens a run's checkpoints. Commits the user added on
// top of the run's last checkpoint are kept (the run goes on from them);
// a branch that went elsewhere, or uncommitted work, is refused.
func (s *session) resumeCheckpoints(ctx context.Context, st *runrecord.State, w io.Writer) (*checkpoint.Repo, error) {
	cp := st.Checkpoints
	if cp == nil {
		return nil, nil // a run from before checkpoints: one shared workspace
	}
	repo, err := s.openCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	if err := refuseUnwritable(repo); err != nil {
		return nil, err
	}
	if repo.Mode() != cp.Mode {
		return nil, cmdutil.UsageError(fmt.Errorf("run %s keeps its checkpoints in a %s repository, but the workspace %s now has a %s one: run from the run's workspace (--workspace)",
			st.RunID, cp.Mode, repo.WorkTree(), repo.Mode()))
	}
	if repo.Branch() != cp.Branch {
		// The run never writes into a checkout the user switched.
		back := cp.Branch
		if back == "" {
			back = "--detach " + short(cp.Head)
		}
		return nil, cmdutil.UsageError(fmt.Errorf("run %s commits to %s, but the workspace is now on %s: switch back (`git switch %s`), then resume",
			st.RunID, branchName(cp.Branch), branchName(repo.Branch()), back))
	}
	if err := repo.CheckFilters(ctx); err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if err := s.includeIgnored(ctx, repo, w); err != nil {
		return nil, err
	}
	if j := cp.Rollback; j != nil {
		what, _ := journalled(st.RunID, j)
		fmt.Fprintf(w, "checkpoints: finishing the %s that was interrupted (%s to %s)\n", what, short(j.From), short(j.To))
		if err := finishRollback(ctx, s, st, repo); err != nil {
			return nil, err
		}
	}
	for _, in := range st.Info {
		if in.Merging != "" {
			return repo, nil // a move cut short: the orchestrator finishes it, file by file
		}
	}
	if err := s.refuseDirty(ctx, repo); err != nil {
		return nil, err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, cmdutil.UsageError(fmt.Errorf("checkpoints: %w", err))
	}
	if head != cp.Head {
		if !repo.IsAncestor(ctx, cp.Head, head) {
			return nil, cmdutil.UsageError(fmt.Errorf("run %s: HEAD %s is not on top of the run's last checkpoint %s: the branch was reset or rewritten; `planagent rollback %s --start` or start a new run",
				st.RunID, short(head), short(cp.Head), st.RunID))
		}
		fmt.Fprintf(w, "checkpoints: going on from your commits on top of the run's (%s)\n", short(head))
		cp.Head = head
	}
	return repo, nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// repoOption is the orchestrator's Repo, nil (not a nil pointer in an
// interface) for a run without checkpoints.
func repoOption(repo *checkpoint.Repo) orchestrator.Repo {
	if repo == nil {
		return nil
	}
	return repo
}

// newWatcher is fsnotify's, unless CODEAGENT_FAILPOINT=inotify makes it
// fail as it does once the per-user inotify instances are all taken: how
// the end-to-end tests prove that a run then polls.
func newWatcher(getenv func(string) string) func() (*fsnotify.Watcher, error) {
	if getenv("CODEAGENT_FAILPOINT") != "inotify" {
		return fsnotify.NewWatcher
	}
	return func() (*fsnotify.Watcher, error) {
		return nil, fmt.Errorf("couldn't initialize inotify: %w", syscall.EMFILE)
	}
}

// failpoint kills planagent with SIGKILL at the point named by
// CODEAGENT_FAILPOINT: how the end-to-end tests prove that a crash in the
// middle of a merge is repaired by resume. "name#n" kills at the n-th
// time the point is reached. Unset, it does nothing.
func failpoint() func(string) {
	at := os.Getenv("CODEAGENT_FAILPOINT")
	if at == "" {
		return nil
	}
	at, nth, _ := strings.Cut(at, "#")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	var mu sync.Mutex
	return func(name string) {
		if name != at {
			return
		}
		mu.Lock()
		n--
		last := n == 0
		mu.Unlock()
		if last {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}

// runCheckpoints loads a run and its checkpoint repository.
func (s *session) runCheckpoints(ctx context.Context, runID string) (*runrecord.State, *checkpoint.Repo, error) {
	st, err := runrecord.LoadState(s.layout, runID, false)
	if err != nil {
		return nil, nil, cmdutil.UsageError(err)
	}
	if st.Checkpoints == nil {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("run %s has no checkpoints (it was started by a planagent without them)", st.RunID))
	}
	if st.Settings != nil && st.Settings.Workspace != "" {
		// The run's own workspace, whatever --workspace says now.
		if s.layout, err = volume.New(s.layout.Root, st.Settings.Workspace); err != nil {
			return nil, nil, cmdutil.UsageError(err)
		}
	}
	repo, err := s.openCheckpoints(ctx)
	if err != nil {
		return nil, nil, err
	}
	if repo.Mode() != st.Checkpoints.Mode {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("run %s keeps its checkpoints in a %s repository, but the workspace %s now has a %s one: run from the run's workspace (--workspace)",
			st.RunID, st.Checkpoints.Mode, s.layout.Workspace(), repo.Mode()))
	}
	return st, repo, nil
}

// branchName is a branch as a user reads it ("" is a detached HEAD).
func branchName(b string) string {
	if b == "" {
		return "a detached HEAD"
	}
	return "branch " + b
}
