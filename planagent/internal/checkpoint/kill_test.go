package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// advanceHelperEnv makes the test binary a process that only runs
// Advance (workspace, old, new in the next variables), to be killed.
const advanceHelperEnv = "CODEAGENT_TEST_ADVANCE"

func TestMain(m *testing.M) {
	if ws := os.Getenv(advanceHelperEnv); ws != "" {
		ctx := context.Background()
		r, err := Open(ctx, ws, filepath.Join(os.TempDir(), "unused-shadow.git"), nil)
		if err == nil {
			err = r.Advance(ctx, os.Getenv(advanceHelperEnv+"_OLD"), os.Getenv(advanceHelperEnv+"_NEW"))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(runTests(m))
}

// runTests runs the tests with a directory for the templates they copy
// (fixture_test.go), removed after them.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "checkpoint-fixtures-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	userRepoTmpl.root = dir
	return m.Run()
}

// A process running Advance killed with SIGKILL (with the git commands it
// started: its whole process group) at various points of the move leaves
// HEAD at the old or the new commit, and running Advance again finishes
// the move: a clean tree at the new commit.
func TestAdvanceKilledThenRedone(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 of subprocesses moving an 800-file tree, seconds each: not in -short")
	}
	for _, delay := range []time.Duration{10 * time.Millisecond, 80 * time.Millisecond, 200 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			ws := userRepo(t)
			r := open(t, ws)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			_, a := attempt(t, r, start, "a", func(dir string) {
				for i := range 800 {
					write(t, dir, fmt.Sprintf("gen/d%02d/f %04d é.txt", i%20, i), fmt.Sprintf("file %d\n", i))
				}
				write(t, dir, "notes.txt", "one\nTWO\nthree\n")
			})
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), advanceHelperEnv+"="+ws, advanceHelperEnv+"_OLD="+start, advanceHelperEnv+"_NEW="+a)
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()

			if h, _ := r.Head(ctx); h != start && h != a {
				t.Fatalf("HEAD %s after the kill: neither the old %s nor the new %s", h, start, a)
			}
			// A git command killed while writing the index or moving the
			// branch leaves its lock; what a user would do after a crash,
			// so must the redo.
			_ = os.Remove(filepath.Join(ws, ".git", "index.lock"))
			_ = os.Remove(filepath.Join(ws, ".git", "refs", "heads", "main.lock"))
			if err := r.Advance(ctx, start, a); err != nil {
				t.Fatalf("redo after the kill: %v", err)
			}
			if h, _ := r.Head(ctx); h != a {
				t.Fatalf("HEAD %s after the redo, want %s", h, a)
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" {
				t.Errorf("after the redo: status %q", st)
			}
			if read(t, ws, "notes.txt") != "one\nTWO\nthree\n" || read(t, ws, "gen/d19/f 0799 é.txt") != "file 799\n" {
				t.Error("the redone move did not write the new files")
			}
		})
	}
}
