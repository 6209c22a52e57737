package orchestrator

// worker does the work the loop hands off to goroutines: an attempt's
// copy (makeCopy), its check on its own result (check), a merge and its
// acceptance commands (merge, accept, runAcceptance). It works from the
// values it is handed and the run's options, on the repository and in the
// runtime, and returns what it found for the loop to decide on: it has no
// way to the run's state, the graph or the record, so nothing it does
// races the loop that owns them.
type worker struct {
	opts *Options
}
