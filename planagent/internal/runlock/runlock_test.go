package runlock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The helper process holds the lock of the dir in RUNLOCK_HELPER_DIR and
// says so on stdout, then waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RUNLOCK_HELPER_DIR"); dir != "" {
		if _, err := Acquire(dir); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		select {}
	}
	os.Exit(m.Run())
}

func holdInChild(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNLOCK_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("helper: %q", line)
	}
	return cmd
}

func TestSecondHolderIsRefusedWithTheHoldersPid(t *testing.T) {
	dir := t.TempDir() + "/runs/run-1"
	child := holdInChild(t, dir)
	_, err := Acquire(dir)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(child.Process.Pid)) {
		t.Fatalf("second Acquire: %v; want ErrHeld naming pid %d", err, child.Process.Pid)
	}
	// In the same process too (each Acquire is its own open file).
	dir2 := t.TempDir()
	l, err := Acquire(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(dir2); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire in-process: %v", err)
	}
	l.Release()
	l2, err := Acquire(dir2)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l2.Release()
}

func TestDeadHoldersLockIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	child := holdInChild(t, dir)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("the lock of a killed holder: %v", err)
	}
	defer l.Release()
	b, _ := os.ReadFile(dir + "/lock")
	if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file says %q, want our pid %d", b, os.Getpid())
	}
}

// Free tells a live holder (another process, or this one) from a dead or
// absent one, and creates nothing.
func TestFree(t *testing.T) {
	free := func(dir string) bool {
		t.Helper()
		ok, err := Free(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	missing := t.TempDir() + "/runs/never"
	if !free(missing) {
		t.Error("a run dir that does not exist is not free")
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("Free created %s: %v", missing, err)
	}
	dir := t.TempDir()
	child := holdInChild(t, dir)
	if free(dir) {
		t.Error("held by a live process, yet free")
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if !free(dir) {
		t.Error("its holder was killed, yet not free")
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if free(dir) {
		t.Error("held by this process, yet free")
	}
	l.Release()
	if !free(dir) {
		t.Error("released, yet not free")
	}
	// The probe leaves the lock to the next Acquire.
	l, err = Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Free: %v", err)
	}
	l.Release()
}
