package runrecord

// Stop reasons: why a run ended, for scripts (run_end, status --json,
// runs --json, summary.md). Each maps to one exit code (README).
const (
	StopCompleted   = "completed"     // every task completed: exit 0
	StopTaskFailed  = "task_failed"   // a task failed after its retries (or the decider aborted): exit 1
	StopBudgetTok   = "budget_tokens" // the run's token budget: exit 3
	StopBudgetUSD   = "budget_usd"    // the run's cost budget: exit 3
	StopBudgetTime  = "budget_time"   // the run's time budget: exit 3
	StopInterrupted = "interrupted"   // Ctrl-C, SIGTERM: exit 130
	StopModelError  = "model_error"   // the failed tasks failed on the provider's error after retries: exit 1
	StopSetupError  = "setup_error"   // the run could not start or go on (engine, image, workspace): exit 2
)

// Stop is why a run ended. Tasks are the tasks that failed (task_failed,
// model_error); Limit and Used the budget that bound (in tokens, seconds
// or USD); Detail a line for people (the budget's message, the provider's
// error).
type Stop struct {
	Reason string   `json:"reason"`
	Tasks  []string `json:"tasks,omitempty"`
	Limit  float64  `json:"limit,omitempty"`
	Used   float64  `json:"used,omitempty"`
	Detail string   `json:"detail,omitempty"`
}
