package watch

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// As its container's first process, codingagent ends every other process
// there before it writes the report: a background loop the agent left
// (setsid, so not in its process group) writes nothing after the fence.
// The test runs itself again as the first process of a new PID namespace
// (in a user namespace, so no privilege is needed).
func TestFenceContainerEndsEveryOtherProcess(t *testing.T) {
	if dir := os.Getenv("CODEAGENT_FENCE_CHILD"); dir != "" {
		fenceChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFenceContainerEndsEveryOtherProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "CODEAGENT_FENCE_CHILD="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		t.Fatalf("cannot start a process in a new PID namespace here: %v", err)
	}
	if !strings.Contains(string(out), "FENCED:ok") {
		t.Fatalf("the fence did not hold (%v):\n%s", err, out)
	}
}

// fenceChild is the first process of its PID namespace: it leaves a loop
// running, fences, and checks the loop wrote nothing after.
func fenceChild(dir string) {
	fail := func(why string) { os.Stdout.WriteString("FENCED:fail " + why + "\n"); os.Exit(1) }
	if os.Getpid() != 1 {
		fail("not the first process of the namespace")
	}
	tick := filepath.Join(dir, "tick")
	loop := exec.Command("/bin/sh", "-c", `setsid /bin/sh -c 'i=0; while :; do i=$((i+1)); echo $i > "$0.tmp" && mv "$0.tmp" "$0"; done' "$1" &`, "sh", tick)
	if err := loop.Run(); err != nil {
		fail(err.Error())
	}
	for range 500 {
		if _, err := os.Stat(tick); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !fenceContainer(slog.New(slog.DiscardHandler)) {
		fail("fenceContainer gave up")
	}
	before, err := os.ReadFile(tick)
	if err != nil {
		fail("the loop never ran: " + err.Error())
	}
	time.Sleep(300 * time.Millisecond)
	after, _ := os.ReadFile(tick)
	if string(before) != string(after) {
		fail("the loop still writes: " + strings.TrimSpace(string(before)) + " then " + strings.TrimSpace(string(after)))
	}
	os.Stdout.WriteString("FENCED:ok\n")
}
