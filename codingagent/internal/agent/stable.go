package agent

import (
	"github.com/codeagent/codeagent/internal/llm"
)

// reshapeRatio is when the request is shaped anew: once a fresh shaping
// (older results abbreviated, focused files re-read) would send at most
// this fraction of the tokens the frozen prefix plus the verbatim tail
// sends. Between reshapes the request only grows at its end, so a
// provider's prompt cache (Anthropic's breakpoints, OpenAI's and others'
// automatic prefix caching) serves everything sent before; a reshape
// rewrites the prefix once and is paid once as a cache write. At 0.6 a
// reshape saves at least 40% of every following request, which pays for
// that write within a few turns even at cache prices.
const reshapeRatio = 0.7

// stableView is the shaped part of the request, frozen between reshapes:
// the system prompt (focused files and repo map as they were then) and the
// shaped form of the history's first n messages. Messages appended since
// follow verbatim, in full, as the model first saw them.
type stableView struct {
	valid    bool
	gen      int // the history's generation it was shaped from
	n        int
	system   string
	msgs     []llm.Message
	reshapes int // reshapes so far, the first one included
}

// buildRequest is the next request: the frozen prefix plus the new
// messages, or, when a fresh shaping saves enough (or the history was
// compacted), the fresh shaping, which becomes the new frozen prefix.
func (a *Agent) buildRequest() llm.Request {
	fresh := a.shape()
	if a.stable.valid && a.stable.gen == a.hist.gen && a.stable.n <= len(a.hist.msgs) && !a.reshapeEachTurn {
		kept := a.stableRequest(fresh)
		if float64(llm.EstimateTokens(fresh.Messages)) > reshapeRatio*float64(llm.EstimateTokens(kept.Messages)) {
			return kept
		}
	}
	a.freeze(fresh)
	return fresh
}

// reshape makes the fresh shaping the frozen prefix now: after the view
// options or the history changed (masking, a summary).
func (a *Agent) reshape() llm.Request {
	fresh := a.shape()
	a.freeze(fresh)
	return fresh
}

func (a *Agent) freeze(req llm.Request) {
	a.stable = stableView{
		valid:    true,
		gen:      a.hist.gen,
		n:        len(a.hist.msgs),
		system:   req.Messages[0].Content,
		msgs:     cloneMessages(req.Messages[1:]),
		reshapes: a.stable.reshapes + 1,
	}
}

// stableRequest is the frozen prefix followed by the messages appended
// since, with tools and model from base (the fresh request).
func (a *Agent) stableRequest(base llm.Request) llm.Request {
	tail := a.hist.msgs[a.stable.n:]
	msgs := make([]llm.Message, 0, 1+len(a.stable.msgs)+len(tail))
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: a.stable.system})
	msgs = append(msgs, cloneMessages(a.stable.msgs)...)
	msgs = append(msgs, cloneMessages(tail)...)
	base.Messages = msgs
	return base
}
