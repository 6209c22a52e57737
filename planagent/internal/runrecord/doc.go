// Package runrecord is a run's durable record: its State (tasks, per-task
// TaskInfo, decisions, usage, checkpoints, why it stopped), written as a
// snapshot (state.json) plus a journal of transitions (journal.jsonl), and
// LoadState to read it back. The orchestrator writes it; the views (status,
// the web view, review) and the CLI only read it, so they import this
// package and not the engine.
package runrecord
