package agent

import (
	"context"
)

// Compact summarises the conversation now, keeping only the latest round
// (the chat's /compact). The compaction event tells the numbers.
func (a *Agent) Compact(ctx context.Context) error {
	a.run = &runState{changed: map[string]bool{}, started: true}
	return a.compact(ctx, true)
}

// ContextInfo is how full the context is (the chat's /context).
type ContextInfo struct {
	Tokens       int      // estimated prompt tokens of the next request
	Window       int      // the model's window minus the reserved output
	Compaction   int      // tokens at which the history is compacted
	Messages     int      // messages in the live history
	FocusedFiles []string // least recently used first
	MemoryPath   string
	MemoryChars  int
}

// ContextInfo reports the context as the next request would use it (the
// repo map included, rendered now if the focus changed).
func (a *Agent) ContextInfo(ctx context.Context) ContextInfo {
	a.refreshRepoMap(ctx)
	req := a.buildRequest()
	return ContextInfo{
		Tokens:       a.monitor.usage(req),
		Window:       a.effectiveWindow(),
		Compaction:   a.limit(),
		Messages:     len(a.hist.msgs),
		FocusedFiles: a.focus.paths(),
		MemoryPath:   a.opts.MemoryPath,
		MemoryChars:  len(readMemory(a.opts.MemoryPath)),
	}
}
