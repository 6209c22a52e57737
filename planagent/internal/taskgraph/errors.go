package taskgraph

import (
	"errors"

	"github.com/codeagent/codeagent/internal/planspec"
)

// Sentinels for callers that branch on the kind of problem; the wrapped
// messages name the task(s) involved.
var (
	ErrEmptyID           = errors.New("task id is empty")
	ErrDuplicateTask     = errors.New("duplicate task id")
	ErrUnknownTask       = errors.New("unknown task")
	ErrUnknownDependency = errors.New("unknown dependency")
	ErrSelfDependency    = errors.New("task depends on itself")
	ErrCycle             = planspec.ErrCycle // shared so plan validation and graphs name cycles alike
	ErrInvalidStatus     = errors.New("invalid task status")
	// ErrIllegalTransition is a status change the state machine does not
	// allow, such as completing a task that was never started.
	ErrIllegalTransition = errors.New("illegal status transition")
	// ErrNotReady is starting a task whose dependencies are not all completed.
	ErrNotReady = errors.New("task is not ready")
)
