package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Stream chunk shapes, written by hand rather than with go-openai's types so
// that omitted fields are omitted as OpenAI omits them.
type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string           `json:"role,omitempty"`
	Content          *string          `json:"content,omitempty"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	Reasoning        *string          `json:"reasoning,omitempty"`
	ReasoningDetails []map[string]any `json:"reasoning_details,omitempty"`
	ToolCalls        []chunkToolCall  `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index        *int            `json:"index,omitempty"`
	ID           string          `json:"id,omitempty"`
	Type         string          `json:"type,omitempty"`
	Function     chunkFunction   `json:"function"`
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, n int, req Request, reply Reply) {
	if reply.Delay > 0 && !s.wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeScriptedError(w, reply)
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	calls := make([]ToolCall, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		if c.ID == "" && reply.Quirks&QuirkNoID == 0 {
			c.ID = s.modeID(n, i)
		}
		if reply.Quirks&QuirkNoID != 0 {
			c.ID = ""
		}
		calls[i] = c
	}
	reply.ToolCalls = calls
	s.remember(reply)
	usage := usageFor(req, reply)
	id := fmt.Sprintf("chatcmpl-llmtest-%d", n)
	if !req.Stream {
		if reply.Hang {
			s.wait(r, time.Duration(1<<62))
			return
		}
		if reply.StallBody {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"id":"` + id + `",`))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			s.wait(r, time.Duration(1<<62))
			return
		}
		s.writeJSON(w, id, req.Model, reply, usage)
		return
	}
	s.stream(w, r, id, req, reply, usage)
}

func writeScriptedError(w http.ResponseWriter, reply Reply) {
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.ErrorBody == "" {
		writeError(w, reply.Status, &ValidationError{Message: fmt.Sprintf("llmtest: scripted HTTP %d (%s)", reply.Status, http.StatusText(reply.Status))})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Status)
	_, _ = w.Write([]byte(reply.ErrorBody))
}

func finishReason(reply Reply) string {
	if len(reply.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (s *Server) writeJSON(w http.ResponseWriter, id, model string, reply Reply, usage *Usage) {
	msg := Message{Role: roleAssistant, Content: reply.Content}
	for _, c := range reply.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, WireCall{
			ID: c.ID, Type: typeFunction,
			Function: FunctionCall{Name: c.Name, Arguments: c.Arguments},
		})
	}
	s.modeMessage(&msg, reply)
	body := map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []map[string]any{{
			"index": 0, "message": msg, "finish_reason": finishReason(reply),
		}},
	}
	if usage != nil {
		body["usage"] = usage
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// stream writes the reply as server-sent events in the order OpenAI uses:
// a role chunk, content pieces, tool call pieces, the finish chunk, the
// usage chunk when asked for, then [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, req Request, reply Reply, usage *Usage) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	send := func(choices []chunkChoice, u *Usage) bool {
		raw, err := json.Marshal(chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model, Choices: choices, Usage: u})
		if err != nil {
			panic(fmt.Sprintf("llmtest: marshal chunk: %v", err)) // only plain types: cannot fail
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", raw); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return r.Context().Err() == nil
	}
	delta := func(d chunkDelta) []chunkChoice { return []chunkChoice{{Delta: d}} }

	empty := ""
	if !send(delta(chunkDelta{Role: roleAssistant, Content: &empty}), nil) {
		return
	}
	if reply.Hang {
		s.wait(r, time.Duration(1<<62))
		return
	}
	pieces := s.deltas(reply)
	if reply.StreamError != "" {
		for _, d := range pieces[:len(pieces)/2] {
			if !send(delta(d), nil) {
				return
			}
		}
		raw, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": reply.StreamError, "type": "server_error", "param": nil, "code": nil,
		}})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", raw)
		return
	}
	if reply.CutStream {
		// Half the answer, at least one piece, then a clean end of the body:
		// the client sees io.EOF without a finish_reason, as after a proxy
		// drops the upstream connection.
		pieces = pieces[:max(1, len(pieces)/2)]
		for _, d := range pieces {
			if !send(delta(d), nil) {
				return
			}
		}
		return
	}
	for _, d := range pieces {
		if !send(delta(d), nil) {
			return
		}
	}
	finish := finishReason(reply)
	if !send([]chunkChoice{{Delta: chunkDelta{}, FinishReason: &finish}}, nil) {
		return
	}
	if usage != nil && req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		if !send([]chunkChoice{}, usage) {
			return
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// deltas splits the reply's content and tool calls into chunk-size pieces.
func (s *Server) deltas(reply Reply) []chunkDelta {
	out := s.modeDeltas(reply)
	for _, piece := range split(reply.Content, s.opts.chunkSize) {
		out = append(out, chunkDelta{Content: &piece})
	}
	for i, c := range reply.ToolCalls {
		index := &i
		if reply.Quirks&QuirkNoIndex != 0 {
			index = nil
		}
		first := chunkToolCall{Index: index, ID: c.ID, Type: typeFunction, Function: chunkFunction{Name: c.Name}}
		if s.opts.mode == ModeGemini {
			first.ExtraContent = extraFor(c.ID)
		}
		out = append(out, chunkDelta{ToolCalls: []chunkToolCall{first}})
		var args []chunkDelta
		for _, piece := range split(c.Arguments, s.opts.chunkSize) {
			tc := chunkToolCall{Index: index, Function: chunkFunction{Arguments: piece}}
			if reply.Quirks&QuirkRepeatName != 0 {
				tc.ID, tc.Type, tc.Function.Name = c.ID, typeFunction, c.Name
			}
			args = append(args, chunkDelta{ToolCalls: []chunkToolCall{tc}})
		}
		for range max(c.Repeat, 1) {
			out = append(out, args...)
		}
	}
	return out
}

// split cuts s into pieces of n runes, keeping each piece valid UTF-8.
func split(s string, n int) []string {
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		k := min(n, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}

// usageFor is the usage the server reports: the scripted one, a chars/4
// estimate, or nil when the reply says to send none.
func usageFor(req Request, reply Reply) *Usage {
	if reply.NoUsage {
		return nil
	}
	if reply.Usage != nil {
		u := *reply.Usage
		return &u
	}
	chars := len(reply.Content)
	for _, c := range reply.ToolCalls {
		chars += len(c.Name) + len(c.Arguments)
	}
	completion := (chars + 3) / 4
	prompt := estimate(req.Messages)
	return &Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// estimate is chars/4 over contents and tool call names and arguments, the
// same rule as llm.EstimateTokens (not imported: llm's tests import this package).
func estimate(msgs []Message) int {
	chars := 0
	for _, m := range msgs {
		chars += len(m.Content)
		for _, c := range m.ToolCalls {
			chars += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return (chars + 3) / 4
}
