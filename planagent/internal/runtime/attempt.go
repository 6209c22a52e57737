package runtime

// Attempt is one attempt at one task, as the orchestrator hands it to a
// runtime once its command file is written.
type Attempt struct {
	RunID, TaskID string
	Attempt       int
	Dir           string // host path of the workspace the attempt works in (its own copy)
	Rel           string // the same, relative to the volumes root, as the command names it
}

// Exit is an agent dying before it reported: the attempt of TaskID, or the
// shared watcher serving every task when TaskID is "".
type Exit struct {
	TaskID string
	// Attempt is the attempt whose agent died (0: not known). Its death
	// may be noticed only after the orchestrator dispatched the next
	// attempt of the task, which must not be taken for dead with it.
	Attempt int
	Err     error
}
