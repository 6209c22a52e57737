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
	Err    error
}
