package llmclient

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/codeagent/codeagent/internal/llm"
)

// What go-openai's response types lack is read from the raw body, which
// the HTTP layer keeps a copy of (teeBody): OpenRouter's `reasoning` and
// `reasoning_details`, Gemini's extra_content on tool calls, DeepSeek's
// prompt_cache_hit_tokens.

// maxRawBody bounds the copy; past it the extras of that answer are lost
// (a 64 MiB answer is not one a coding agent gets).
const maxRawBody = 64 << 20

// teeBody copies what go-openai reads of a response body.
type teeBody struct {
	io.ReadCloser
	buf *bytes.Buffer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && t.buf.Len()+n <= maxRawBody {
		t.buf.Write(p[:n])
	}
	return n, err
}

// teeMode says what the HTTP layer keeps of a 200 answer's body.
type teeMode int

const (
	teeNone  teeMode = iota
	teeRaw           // a copy, up to maxRawBody
	teeLines         // the extras of each event-stream line, as it passes
)

// maxEventLine bounds one event-stream line kept for parsing: a longer one
// (a chunk carrying megabytes of tool arguments) has no extras worth
// holding it for.
const maxEventLine = 1 << 20

// lineExtras parses an event stream's extras line by line.
type lineExtras struct {
	x    *extras
	line []byte
	over bool // the current line passed maxEventLine: skipped
}

func (l *lineExtras) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !l.over && len(l.line)+len(part) > maxEventLine {
			l.over, l.line = true, l.line[:0]
		}
		if !l.over {
			l.line = append(l.line, part...)
		}
		if i < 0 {
			return
		}
		l.end()
		b = b[i+1:]
	}
}

// end finishes the current line.
func (l *lineExtras) end() {
	if !l.over && len(l.line) > 0 {
		l.x.addLine(l.line)
	}
	l.line, l.over = l.line[:0], false
}

// result is the extras of the whole stream.
func (l *lineExtras) result() *extras {
	if l.x == nil {
		return &extras{}
	}
	l.end()
	return l.x
}

// lineTee feeds what go-openai reads of a stream to lines.
type lineTee struct {
	io.ReadCloser
	lines *lineExtras
}

func (t lineTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.lines.write(p[:n])
	}
	return n, err
}

// extras are the parts of an answer go-openai does not model.
type extras struct {
	reasoning strings.Builder  // OpenRouter's reasoning text
	details   []map[string]any // OpenRouter's reasoning_details, stream deltas merged
	rawDetail json.RawMessage  // a non-streamed answer's reasoning_details, verbatim
	sigs      []callSignature
	cacheHit  int // DeepSeek's prompt_cache_hit_tokens
}

type callSignature struct {
	id    string
	index *int
	sig   string
}

// extraContent is Gemini's per-call extension of the OpenAI shape, as an
// answer carries it (llm.ToolCall reads and writes it in session files).
type extraContent struct {
	Google *struct {
		ThoughtSignature string `json:"thought_signature"`
	} `json:"google"`
}

func (e *extraContent) signature() string {
	if e == nil || e.Google == nil {
		return ""
	}
	return e.Google.ThoughtSignature
}

type rawMessage struct {
	Reasoning        *string         `json:"reasoning"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
	ToolCalls        []struct {
		Index        *int          `json:"index"`
		ID           string        `json:"id"`
		ExtraContent *extraContent `json:"extra_content"`
	} `json:"tool_calls"`
}

type rawAnswer struct {
	Choices []struct {
		Index   int        `json:"index"`
		Delta   rawMessage `json:"delta"`
		Message rawMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
	} `json:"usage"`
}

// parseExtras reads a whole answer's body: an event stream or one JSON.
func parseExtras(raw []byte, stream bool) *extras {
	x := &extras{}
	if !stream {
		var a rawAnswer
		if json.Unmarshal(raw, &a) == nil {
			x.add(a, false)
		}
		return x
	}
	l := lineExtras{x: x}
	l.write(raw)
	return l.result()
}

// addLine reads one line of an event stream.
func (x *extras) addLine(line []byte) {
	line, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	line = bytes.TrimSpace(line)
	var a rawAnswer
	if bytes.Equal(line, []byte("[DONE]")) || json.Unmarshal(line, &a) != nil {
		return
	}
	x.add(a, true)
}

func (x *extras) add(a rawAnswer, stream bool) {
	if a.Usage != nil && a.Usage.PromptCacheHitTokens > 0 {
		x.cacheHit = a.Usage.PromptCacheHitTokens
	}
	for _, ch := range a.Choices {
		if ch.Index != 0 {
			continue
		}
		m := ch.Message
		if stream {
			m = ch.Delta
		}
		if m.Reasoning != nil {
			x.reasoning.WriteString(*m.Reasoning)
		}
		if len(m.ReasoningDetails) > 0 && !bytes.Equal(m.ReasoningDetails, []byte("null")) {
			if stream {
				x.mergeDetails(m.ReasoningDetails)
			} else {
				x.rawDetail = m.ReasoningDetails
			}
		}
		for _, tc := range m.ToolCalls {
			if s := tc.ExtraContent.signature(); s != "" {
				x.sigs = append(x.sigs, callSignature{id: tc.ID, index: tc.Index, sig: s})
			}
		}
	}
}

// mergeDetails adds one delta's reasoning_details: OpenRouter streams an
// item as pieces with the same index and type (text pieces, then the
// signature alone), which join into the item it wants back.
func (x *extras) mergeDetails(raw json.RawMessage) {
	var items []map[string]any
	if json.Unmarshal(raw, &items) != nil {
		return
	}
	for _, it := range items {
		if prev := x.sameItem(it); prev != nil {
			for k, v := range it {
				s, isStr := v.(string)
				old, hadStr := prev[k].(string)
				switch {
				case (k == "text" || k == "summary") && isStr && hadStr:
					prev[k] = old + s
				case v != nil && v != "":
					prev[k] = v
				}
			}
			continue
		}
		x.details = append(x.details, it)
	}
}

// sameItem is the item it continues: the last one, with the same index
// and type.
func (x *extras) sameItem(it map[string]any) map[string]any {
	if len(x.details) == 0 {
		return nil
	}
	last := x.details[len(x.details)-1]
	idx, ok := it["index"]
	if !ok || last["index"] != idx || last["type"] != it["type"] {
		return nil
	}
	return last
}

// apply puts the extras into the answer's message, before its calls get
// ids of their own (a signature is matched by the server's id, else by
// the stream index, else by order).
func (x *extras) apply(msg *llm.Message) {
	if x == nil {
		return
	}
	if msg.ReasoningContent == "" {
		msg.ReasoningContent = x.reasoning.String()
	}
	switch {
	case x.rawDetail != nil:
		msg.ReasoningDetails = x.rawDetail
	case len(x.details) > 0:
		if raw, err := json.Marshal(x.details); err == nil {
			msg.ReasoningDetails = raw
		}
	}
	for n, s := range x.sigs {
		pos := -1
		for i, c := range msg.ToolCalls {
			// Gemini may repeat an id: the first call of it still unsigned.
			if s.id != "" && c.ID == s.id && c.ThoughtSignature == "" {
				pos = i
				break
			}
		}
		if pos < 0 && s.index != nil && *s.index < len(msg.ToolCalls) {
			pos = *s.index
		}
		if pos < 0 && n < len(msg.ToolCalls) {
			pos = n
		}
		if pos >= 0 && msg.ToolCalls[pos].ThoughtSignature == "" {
			msg.ToolCalls[pos].ThoughtSignature = s.sig
		}
	}
}
