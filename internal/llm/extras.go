package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
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
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), maxRawBody)
	for sc.Scan() {
		line, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		line = bytes.TrimSpace(line)
		var a rawAnswer
		if bytes.Equal(line, []byte("[DONE]")) || json.Unmarshal(line, &a) != nil {
			continue
		}
		x.add(a, true)
	}
	return x
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
func (x *extras) apply(msg *Message) {
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
