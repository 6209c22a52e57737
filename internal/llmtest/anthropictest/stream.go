package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// stream writes the answer as Anthropic's server-sent events: message_start
// (with the input usage), per block content_block_start, deltas (text in
// two pieces, thinking then its signature, tool input as partial JSON),
// content_block_stop, then message_delta (stop_reason, output tokens) and
// message_stop, with a ping as the real API sends one.
func (s *Server) stream(w http.ResponseWriter, gone <-chan struct{}, id, model string, blocks []map[string]any, stop string, u Usage, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		raw, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, raw)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := u
	start.Output = 1
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	send("ping", map[string]string{"type": "ping"})
	for i, b := range blocks {
		delta := func(d map[string]any) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			text := b["text"].(string)
			half := len(text) / 2
			delta(map[string]any{"type": "text_delta", "text": text[:half]})
			delta(map[string]any{"type": "text_delta", "text": text[half:]})
		case "thinking":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			delta(map[string]any{"type": "thinking_delta", "thinking": b["thinking"]})
			delta(map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			input := string(b["input"].(json.RawMessage))
			half := len(input) / 2
			delta(map[string]any{"type": "input_json_delta", "partial_json": ""})
			delta(map[string]any{"type": "input_json_delta", "partial_json": input[:half]})
			delta(map[string]any{"type": "input_json_delta", "partial_json": input[half:]})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		if reply.StreamError != "" {
			send("error", map[string]any{"type": "error", "error": map[string]string{"type": reply.StreamError, "message": "scripted " + reply.StreamError}})
			return
		}
		if reply.Stall {
			<-gone
			return
		}
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": u.Output}})
	send("message_stop", map[string]string{"type": "message_stop"})
}
