//go:build e2e

package main

import (
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// dockerRuntime runs the isolation scenarios of isolation_e2e_test.go with
// --runtime docker in e2eImage (by default codeagent/codingagent:latest,
// which has git): each attempt in a container of its own that mounts its
// copy alone. The attempt containers are recorded for
// assertAttemptContainers, and none may be left at the end.
func dockerRuntime(t *testing.T, f *fakeModel) *runEnv {
	cli := dockerE2E(t)
	e := newDockerRunEnv(t, f)
	e.env = append(e.env, "CODEAGENT_RUNTIME=docker")
	e.attempts = watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes, layout.LabelRole+"=attempt")
	t.Cleanup(func() { assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes) })
	return e
}

// The failed attempt's shell-made files, one under an ignored path
// included, are not in the retry's container nor on the disk after the run.
func TestE2EDockerCheckpointsFailedAttemptLeavesNothing(t *testing.T) {
	dockerE2E(t) // skipped (or failed) here rather than in each subtest
	failedAttemptLeavesNothing(t, dockerRuntime)
}

// Two containers edit the same line; the one merged second is redone on
// the new base in a third.
func TestE2EDockerCheckpointsConflictIsRedoneOnTheNewBase(t *testing.T) {
	conflictIsRedoneOnTheNewBase(t, dockerRuntime, 500*time.Millisecond)
}

// `git status` and `git diff` in the attempt's container, in its copy.
func TestE2EDockerCheckpointsGitWorksInTheAttemptsCopy(t *testing.T) {
	gitWorksInTheAttemptsCopy(t, dockerRuntime)
}
