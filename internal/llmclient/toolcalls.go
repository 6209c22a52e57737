package llmclient

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

// callAccumulator rebuilds tool calls from stream deltas. OpenAI sends the
// id and name once, then argument pieces, all with an index. Other servers
// differ: Ollama omits the index, some resend the name (and id) in every
// chunk, some number every call 0 but give each its own id.
type callAccumulator struct {
	calls   []llm.ToolCall
	byIndex map[int]int // server index → position in calls
}

func (a *callAccumulator) add(d openai.ToolCall) {
	pos := a.position(d)
	c := &a.calls[pos]
	if d.ID != "" {
		c.ID = d.ID
	}
	c.Name = mergeName(c.Name, d.Function.Name)
	switch {
	case c.Oversize > 0:
		c.Oversize += len(d.Function.Arguments)
	case len(c.Arguments)+len(d.Function.Arguments) > llm.MaxToolArguments:
		// Dropped from here on; a short head stays so that the next
		// deltas are still told apart from a new call (startsNewCall).
		c.Oversize = len(c.Arguments) + len(d.Function.Arguments)
		c.Arguments = strings.Clone(c.Arguments[:min(len(c.Arguments), 64)])
	default:
		c.Arguments += d.Function.Arguments
	}
}

// position finds the call a delta belongs to, starting a new one if needed.
func (a *callAccumulator) position(d openai.ToolCall) int {
	if d.Index != nil {
		if a.byIndex == nil {
			a.byIndex = map[int]int{}
		}
		pos, ok := a.byIndex[*d.Index]
		if ok && (d.ID == "" || a.calls[pos].ID == "" || a.calls[pos].ID == d.ID) {
			return pos
		}
		pos = a.start()
		a.byIndex[*d.Index] = pos
		return pos
	}
	if len(a.calls) == 0 {
		return a.start()
	}
	last := a.calls[len(a.calls)-1]
	if a.startsNewCall(last, d) {
		return a.start()
	}
	return len(a.calls) - 1
}

// startsNewCall decides, for a delta without an index, whether it begins
// another call rather than continuing the last one.
func (a *callAccumulator) startsNewCall(last llm.ToolCall, d openai.ToolCall) bool {
	if d.ID != "" {
		return last.ID != "" && d.ID != last.ID
	}
	if d.Function.Name == "" || last.Arguments == "" {
		// Argument pieces continue; a name before any arguments may be
		// the rest of a name split over chunks.
		return false
	}
	if !sameName(last.Name, d.Function.Name) {
		return true
	}
	// The same name again with new arguments after a complete JSON value:
	// a second call of the same tool (a resent name comes with pieces of
	// arguments that are not yet complete).
	return d.Function.Arguments != "" && json.Valid([]byte(last.Arguments))
}

func (a *callAccumulator) start() int {
	a.calls = append(a.calls, llm.ToolCall{})
	return len(a.calls) - 1
}

// sameName reports whether a name delta repeats (or regrows) the name
// accumulated so far rather than continuing it.
func sameName(acc, delta string) bool {
	return delta == acc || strings.HasPrefix(delta, acc)
}

// mergeName adds a name delta: a repeated name replaces, a piece appends.
func mergeName(acc, delta string) string {
	switch {
	case delta == "":
		return acc
	case acc == "" || sameName(acc, delta):
		return delta
	}
	return acc + delta
}
