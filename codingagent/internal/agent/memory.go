package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
)

// memoryCap bounds the memory file: it goes into every system prompt.
const memoryCap = 4000

// memorySystem starts with a fixed phrase so test servers (and logs) can
// tell the memory request apart from the task's own requests.
const memorySystem = `You maintain the long-term memory of a coding agent that works on one project across many tasks.
From the finished task's transcript, distil what will help future tasks in this project: conventions (code style, layout, naming, how to build and test), decisions together with their reasons, and pitfalls found. Leave out progress notes and anything only this task needed.
Merge with the existing memory: keep what is still true, drop what the transcript shows to be outdated, do not repeat yourself.
Reply with the complete updated memory only: a markdown bullet list, one fact per line, newest last, at most 4000 characters.`

// readMemory returns the memory file's content ("" when there is none).
func readMemory(path string) string {
	if path == "" {
		return ""
	}
	// context/memory.md is in the volumes: a FIFO there must not block.
	b, err := protocol.ReadRegular(path, 0)
	if err != nil {
		return ""
	}
	return string(b)
}

// Remember distils the conversation into the memory file: the long-term
// memory later tasks and sessions start with. RunTask calls it after a completed task; chat calls it
// when a session ends. Failures are reported as events and returned, and
// never change a task's status.
func (a *Agent) Remember(ctx context.Context) error {
	if a.opts.MemoryPath == "" || len(a.hist.msgs) == 0 {
		return nil
	}
	if a.run == nil {
		a.run = &runState{changed: map[string]bool{}}
	}
	err := a.distil(ctx)
	if err != nil {
		a.logEvent("long-term memory not updated: %v", err)
	}
	return err
}

func (a *Agent) remember(ctx context.Context) { _ = a.Remember(ctx) }

// memoryMerges bounds how often distil starts again because another task
// (a parallel one, or another watcher) rewrote the memory file meanwhile.
const memoryMerges = 3

// distil merges this conversation into the memory file. Tasks running in
// parallel share the file: when it changed while the model was distilling,
// the merge is redone on top of the new content, so no task's facts are lost
// to a later writer.
func (a *Agent) distil(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		base := readMemory(a.opts.MemoryPath)
		mem, err := a.distilOnto(ctx, base)
		if err != nil {
			return err
		}
		if readMemory(a.opts.MemoryPath) != base && attempt < memoryMerges {
			a.logEvent("the memory file changed while it was being updated; merging again")
			continue
		}
		if err := writeAtomic(a.opts.MemoryPath, []byte(mem+"\n")); err != nil {
			return fmt.Errorf("write memory file: %w", err)
		}
		a.memory = mem
		return nil
	}
}

// distilOnto asks the summary model for base updated with this conversation.
func (a *Agent) distilOnto(ctx context.Context, base string) (string, error) {
	old := strings.TrimSpace(base)
	if old == "" {
		old = "(empty)"
	}
	user := "Existing memory:\n\n" + old + "\n\nTranscript of the finished task:\n\n" + transcript(a.hist.msgs, 24000)
	req := llm.Request{Model: a.opts.SummaryModel, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: memorySystem},
		userMessage(user),
	}}
	resp, err := a.chat(ctx, req)
	if err != nil {
		return "", fmt.Errorf("distil memory with %s: %w", a.opts.SummaryModel, err)
	}
	mem := strings.TrimSpace(resp.Message.Content)
	if mem == "" {
		return "", fmt.Errorf("distil memory with %s: the model returned nothing; the memory file was left as it was", a.opts.SummaryModel)
	}
	mem, err = checkMemory(base, mem)
	if err != nil {
		return "", fmt.Errorf("distil memory with %s: %w; the memory file was left as it was", a.opts.SummaryModel, err)
	}
	return boundMemory(mem, memoryCap), nil
}

// checkMemory takes the bullet list out of the model's reply (a code fence
// or a sentence around it goes) and refuses a reply that is no list (a
// refusal, an apology, prose) or that keeps under half of a memory of four
// facts or more: the file goes into every later prompt, so a bad reply
// would cost every later task what the earlier ones learnt.
func checkMemory(base, reply string) (string, error) {
	lines := strings.Split(reply, "\n")
	first, last := -1, -1
	for i, l := range lines {
		if isFact(l) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return "", fmt.Errorf("the model's reply is not a bullet list (%q)", cutRunes(strings.TrimSpace(reply), 80))
	}
	mem := strings.TrimSpace(strings.Join(lines[first:last+1], "\n"))
	had, kept := countFacts(base), countFacts(mem)
	if had >= 4 && kept*2 < had {
		return "", fmt.Errorf("the model's memory keeps %d of the %d facts there were (a merge drops what is outdated, not most of it)", kept, had)
	}
	return mem, nil
}

// isFact reports whether line is an item of a markdown bullet list.
func isFact(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ")
}

func countFacts(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if isFact(l) {
			n++
		}
	}
	return n
}

// boundMemory keeps the newest (last) lines of s that fit in n chars.
func boundMemory(s string, n int) string {
	if len(s) <= n {
		return s
	}
	lines := strings.Split(s, "\n")
	total := 0
	i := len(lines)
	for i > 0 {
		add := len(lines[i-1])
		if i < len(lines) {
			add++ // the newline joining it to the line after
		}
		if total+add > n {
			break
		}
		total += add
		i--
	}
	if i == len(lines) {
		return cutRunes(lines[len(lines)-1], n) // one huge line: keep its start
	}
	return strings.Join(lines[i:], "\n")
}

// writeAtomic replaces path so a reader never sees half a file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return protocol.WriteFileAtomic(path, data, 0o644)
}
