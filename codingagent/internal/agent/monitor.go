package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
)

// monitor tracks how full the context window is, from the usage the server
// reports and our estimate, to decide when to mask and summarise.
type monitor struct {
	lastPrompt int // prompt tokens the server reported for the last request; 0 = none
	lastEst    int // our estimate of that same request
	maskBefore int // bulky tool results before this history index are masked
}

// observe remembers the server's count for req, the base of the next estimate.
func (m *monitor) observe(req llm.Request, u llm.Usage) {
	if u.Estimated || u.Prompt <= 0 {
		m.lastPrompt, m.lastEst = 0, 0
		return
	}
	m.lastPrompt, m.lastEst = u.Prompt, llm.EstimateTokens(req.Messages)
}

// usage estimates the prompt tokens of req: the server's true count of the
// last request plus the estimated difference since (new messages, changed
// focused files, abbreviations). Without a server count, the estimate alone.
func (m *monitor) usage(req llm.Request) int {
	est := llm.EstimateTokens(req.Messages)
	if m.lastPrompt <= 0 {
		return est
	}
	return max(m.lastPrompt+est-m.lastEst, 0)
}

func (a *Agent) limit() int {
	return int(a.opts.Threshold * float64(a.effectiveWindow()))
}

// prepare builds the next request, first making room when the context is
// above the threshold: mask old bulky tool results (cheap), then summarise.
func (a *Agent) prepare(ctx context.Context) llm.Request {
	a.refreshRepoMap(ctx)
	req := a.buildRequest()
	if a.monitor.usage(req) <= a.limit() {
		return req
	}
	// The frozen prefix may be what fills the window: shaping afresh is
	// the cheapest room there is.
	if req = a.reshape(); a.monitor.usage(req) <= a.limit() {
		return req
	}
	if err := a.compact(ctx, false); err != nil {
		// The request may still fit the real window; if not, the server says so
		// and call() compacts harder.
		a.logEvent("compaction failed, continuing with the full history: %v", err)
	}
	return a.buildRequest()
}

// compact makes room. force (after a context-length error) summarises even
// when the estimate says it fits and keeps only the latest round.
func (a *Agent) compact(ctx context.Context, force bool) error {
	before := a.monitor.usage(a.buildRequest())
	if mask := a.unitStart(len(a.hist.msgs) - a.opts.KeepMessages); mask > a.monitor.maskBefore {
		a.monitor.maskBefore = mask
		after := a.monitor.usage(a.reshape())
		if after < before {
			a.emitCompaction("mask", before, after, 0)
			before = after
		}
		if !force && after <= a.limit() {
			return nil
		}
	}
	keep := a.opts.KeepMessages
	if force {
		keep = 1
	}
	start, end, ok := a.summaryRange(keep)
	if !ok {
		return errors.New("nothing left to summarise: the latest messages alone fill the context window")
	}
	summary, err := a.summarise(ctx, a.hist.msgs[start:end])
	if err != nil {
		return err
	}
	if err := a.persistCompaction(start, end, summary); err != nil {
		return err
	}
	a.monitor.maskBefore = 0
	after := a.monitor.usage(a.reshape())
	a.emitCompaction("summary", before, after, end-start)
	return nil
}

func (a *Agent) emitCompaction(kind string, before, after, summarised int) {
	text := fmt.Sprintf("masked old tool results: %d → %d tokens", before, after)
	if kind == "summary" {
		text = fmt.Sprintf("summarised %d messages: %d → %d tokens", summarised, before, after)
	}
	a.emit(events.Event{Type: events.Compaction, Status: kind, Text: text, Data: map[string]any{
		"kind": kind, "tokens_before": before, "tokens_after": after, "messages_summarised": summarised,
		"window": a.effectiveWindow(),
	}})
}

// unitStart moves i back to the start of the unit it falls in, so a cut
// there never separates an assistant tool-call message from its answers.
func (a *Agent) unitStart(i int) int {
	msgs := a.hist.msgs
	if i <= 0 {
		return 0
	}
	if i >= len(msgs) {
		return len(msgs)
	}
	for i > 0 && msgs[i].Role == llm.RoleTool {
		i--
	}
	return i
}

// summaryRange picks the messages to summarise: after the pinned task
// message (or the previous summary) up to the last keep messages, moved to a
// unit boundary.
func (a *Agent) summaryRange(keep int) (start, end int, ok bool) {
	if a.hist.pinned >= 0 {
		start = a.hist.pinned + 1
	}
	end = a.unitStart(len(a.hist.msgs) - keep)
	if end <= start {
		return 0, 0, false
	}
	if end-start == 1 && strings.HasPrefix(a.hist.msgs[start].Content, summaryPrefix) {
		return 0, 0, false // only the previous summary: nothing new to fold in
	}
	return start, end, true
}

const summarySystem = `You compact the earlier part of a coding agent's conversation so the agent can continue without it.
Write a summary that keeps everything the agent still needs: the goal and its requirements, decisions and their reasons, files created or changed and what changed, facts learned (names, paths, values, commands that work, test results), errors hit and how they were solved, and what remains to do.
If the transcript starts with an earlier summary, fold it in. Be concise: bullet points, no preamble.`

// summarise asks the summary model for a summary of msgs.
func (a *Agent) summarise(ctx context.Context, msgs []llm.Message) (string, error) {
	budget := a.effectiveWindow() * 2 // chars: about half the window, so the request fits
	req := llm.Request{Model: a.opts.SummaryModel, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: summarySystem},
		userMessage("Transcript to summarise:\n\n" + transcript(msgs, budget)),
	}}
	resp, err := a.chat(ctx, req)
	if err != nil {
		return "", fmt.Errorf("summarise %d messages with %s: %w", len(msgs), a.opts.SummaryModel, err)
	}
	s := strings.TrimSpace(resp.Message.Content)
	if s == "" {
		return "", fmt.Errorf("summarise %d messages with %s: the model returned an empty summary", len(msgs), a.opts.SummaryModel)
	}
	return s, nil
}

// transcript renders messages as plain text for the summary and memory
// models: no tool-call structure to keep consistent, and bounded in size.
func transcript(msgs []llm.Message, budget int) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			b.WriteString("USER:\n" + headTail(m.Content, 6000) + "\n\n")
		case llm.RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				b.WriteString("ASSISTANT:\n" + headTail(m.Content, 4000) + "\n")
			}
			for _, c := range m.ToolCalls {
				b.WriteString("ASSISTANT CALLS " + c.Name + " " + headTail(c.Arguments, 600) + "\n")
			}
			b.WriteString("\n")
		case llm.RoleTool:
			b.WriteString("TOOL RESULT:\n" + headTail(m.Content, 1500) + "\n\n")
		}
	}
	return headTail(b.String(), budget)
}
