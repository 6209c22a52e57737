package agent

import (
	"fmt"

	"github.com/codeagent/codeagent/codingagent/internal/session"
	"github.com/codeagent/codeagent/internal/llm"
)

// summaryPrefix starts the user message that stands for compacted history.
const summaryPrefix = "[Summary of earlier conversation]"

// history is the live conversation. Every change is written to the session
// log before it is made here, so replaying the log rebuilds the same state.
type history struct {
	msgs   []llm.Message
	taskID string // task whose conversation this is ("" for chat)
	pinned int    // index of the task's first message, which compaction keeps; -1 = none
	gen    int    // compactions so far: a shaped prefix of an older generation is void
}

func newHistory() history { return history{pinned: -1} }

// apply replays one record.
func (h *history) apply(r session.Record) error {
	switch r.Kind {
	case session.KindTask:
		h.taskID = r.TaskID
		h.pinned = len(h.msgs)
	case session.KindMessage:
		if r.Message == nil {
			return fmt.Errorf("message record without a message")
		}
		h.msgs = append(h.msgs, *r.Message)
	case session.KindCompaction:
		if r.Start < 0 || r.End < r.Start || r.End > len(h.msgs) {
			return fmt.Errorf("compaction record [%d,%d) outside a history of %d messages", r.Start, r.End, len(h.msgs))
		}
		h.compact(r.Start, r.End, r.Summary)
	}
	return nil
}

// compact replaces msgs[start:end] by one summary message.
func (h *history) compact(start, end int, summary string) {
	out := make([]llm.Message, 0, len(h.msgs)-(end-start)+1)
	out = append(out, h.msgs[:start]...)
	out = append(out, summaryMessage(summary))
	out = append(out, h.msgs[end:]...)
	h.msgs = out
	h.gen++
	if h.pinned >= end {
		h.pinned -= end - start - 1
	}
}

func summaryMessage(summary string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: summaryPrefix + "\n" + summary}
}

// unanswered returns the ids (in order) of the last assistant message's tool
// calls that no tool message answers yet.
func (h *history) unanswered() (calls []llm.ToolCall) {
	i := len(h.msgs) - 1
	answered := map[string]bool{}
	for ; i >= 0 && h.msgs[i].Role == llm.RoleTool; i-- {
		answered[h.msgs[i].ToolCallID] = true
	}
	if i < 0 || h.msgs[i].Role != llm.RoleAssistant {
		return nil
	}
	for _, c := range h.msgs[i].ToolCalls {
		if !answered[c.ID] {
			calls = append(calls, c)
		}
	}
	return calls
}

// lastAnswer is the content of a final assistant message (one without tool
// calls) ending the history, if there is one.
func (h *history) lastAnswer() (string, bool) {
	if len(h.msgs) == 0 {
		return "", false
	}
	m := h.msgs[len(h.msgs)-1]
	if m.Role != llm.RoleAssistant || len(m.ToolCalls) > 0 {
		return "", false
	}
	return m.Content, true
}

// openSession loads the log at SessionPath and replays it.
func (a *Agent) openSession() error {
	log, err := session.Open(a.opts.SessionPath)
	if err != nil {
		return err
	}
	recs, err := log.Load()
	if err != nil {
		_ = log.Close()
		return err
	}
	a.log = log
	a.hist = newHistory()
	for i, r := range recs {
		if err := a.hist.apply(r); err != nil {
			_ = log.Close()
			return fmt.Errorf("session %s record %d: %w (move the file away to start a fresh session)", a.opts.SessionPath, i+1, err)
		}
		if r.Kind == session.KindFocus {
			a.focus.touch(r.Path, r.Edited)
		}
	}
	// A crash between a tool-call message and its answers leaves calls no
	// server would accept unanswered; answer them before anything else.
	for _, c := range a.hist.unanswered() {
		msg := toolMessage(c.ID, "not run: the agent stopped before this tool call ran; call it again if it is still needed")
		if err := a.appendMessage(msg); err != nil {
			return err
		}
	}
	return nil
}

// record persists r (when there is a log).
func (a *Agent) record(r session.Record) error {
	if a.log == nil {
		return nil
	}
	if err := a.log.Append(r); err != nil {
		return fmt.Errorf("persist conversation: %w", err)
	}
	return nil
}

// appendMessage persists m, then adds it to the history.
func (a *Agent) appendMessage(m llm.Message) error {
	if err := a.record(session.Record{Kind: session.KindMessage, Message: &m}); err != nil {
		return err
	}
	a.hist.msgs = append(a.hist.msgs, m)
	return nil
}

// startTask persists the task marker and its first message.
func (a *Agent) startTask(id string, msg llm.Message) error {
	r := session.Record{Kind: session.KindTask, TaskID: id}
	if err := a.record(r); err != nil {
		return err
	}
	if err := a.hist.apply(r); err != nil {
		return err
	}
	return a.appendMessage(msg)
}

// persistCompaction persists and applies a compaction of msgs[start:end].
func (a *Agent) persistCompaction(start, end int, summary string) error {
	r := session.Record{Kind: session.KindCompaction, Start: start, End: end, Summary: summary}
	if err := a.record(r); err != nil {
		return err
	}
	return a.hist.apply(r)
}

// touchFocus persists and applies a focused-file change.
func (a *Agent) touchFocus(path string, edited bool) error {
	if err := a.record(session.Record{Kind: session.KindFocus, Path: path, Edited: edited}); err != nil {
		return err
	}
	a.focus.touch(path, edited)
	return nil
}

func toolMessage(callID, content string) llm.Message {
	if content == "" {
		// The request omits empty content, and a tool message without content is refused.
		content = "(no output)"
	}
	return llm.Message{Role: llm.RoleTool, ToolCallID: callID, Content: content}
}
