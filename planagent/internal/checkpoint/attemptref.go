package checkpoint

import "fmt"

// AttemptRef is the ref that keeps the squashed result of attempt n of task
// in run once the run chose another attempt (or none) for the task: the
// losers stay inspectable (planagent diff --attempt, pick) after their
// copies are gone. Run and task ids are protocol ids, valid in a ref name.
func AttemptRef(run, task string, n int) string {
	return fmt.Sprintf("refs/codeagent/%s/%s/attempt-%d", run, task, n)
}
