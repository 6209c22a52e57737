// Package responsestest is a fake OpenAI Responses API (/v1/responses) for
// tests, strict where the real API is strict for stateless use, per
// OpenAI's documentation and public reports: with store false, a reasoning
// item sent back without its encrypted_content is unknown ("Item with id
// 'rs_…' not found"), as is one whose encrypted content the server never
// issued; a function_call_output must answer a function_call earlier in
// the input ("No tool call found for function call output with call_id
// …"), every function_call must be answered ("No tool output found for
// function call …"), and a function_call the model made right after a
// reasoning item must come with that item ("… was provided without its
// required 'reasoning' item"). It answers scripted replies, plain or as a
// stream, with usage that counts the input reused from the previous
// request as cached_tokens.
package responsestest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Reply is one scripted answer.
type Reply struct {
	Reasoning string // a reasoning item with this summary (and encrypted content) first
	Text      string
	Calls     []Call
	Status    int // when not 0: an HTTP error with ErrCode
	ErrCode   string
}

// Call is one function_call item.
type Call struct{ Name, Arguments string }

// Server is the fake; New starts it and closes it with the test.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	next     int
	bodies   [][]byte
	issued   map[string]string // rs id -> encrypted content
	needs    map[string]string // call_id -> rs id it followed
	prev     int               // input size (chars) of the previous request
	problems []string
}

// New starts a fake answering replies in order (the last again when the
// script runs out).
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{script: replies, issued: map[string]string{}, needs: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Bodies returns the request bodies received.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Rejections returns the 400 messages sent.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

type item struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	Role             string `json:"role"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
}

type request struct {
	Model   string            `json:"model"`
	Input   []json.RawMessage `json:"input"`
	Store   *bool             `json:"store"`
	Include []string          `json:"include"`
	Stream  bool              `json:"stream"`
	// Reasoning.Effort is checked against the values OpenAI documents.
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		writeError(w, http.StatusNotFound, "not_found", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "You didn't provide an API key.")
		return
	}
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, raw)
	reply := Reply{Text: "done"}
	if len(s.script) > 0 {
		reply = s.script[min(s.next, len(s.script)-1)]
	}
	s.next++
	n := s.next
	s.mu.Unlock()

	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		s.reject(w, err.Error())
		return
	}
	if problem := s.validate(req); problem != "" {
		s.reject(w, problem)
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, reply.ErrCode, "scripted "+reply.ErrCode)
		return
	}
	out := s.output(reply, n)
	usage := s.usage(raw, out)
	resp := map[string]any{"id": fmt.Sprintf("resp_fake%03d", n), "object": "response", "status": "completed",
		"model": req.Model, "output": out, "store": false, "usage": usage}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	stream(w, resp, out)
}

func (s *Server) reject(w http.ResponseWriter, problem string) {
	s.mu.Lock()
	s.problems = append(s.problems, problem)
	s.mu.Unlock()
	writeError(w, http.StatusBadRequest, "invalid_request_error", problem)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

func (s *Server) validate(req request) string {
	if req.Store == nil || *req.Store {
		return "this fake serves stateless use only: send store: false"
	}
	if len(req.Input) == 0 {
		return "input: at least one item is required"
	}
	if r := req.Reasoning; r != nil && !slices.Contains([]string{"none", "minimal", "low", "medium", "high", "xhigh"}, r.Effort) {
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'. (param reasoning.effort)", r.Effort)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seenReasoning := map[string]bool{}
	calls := map[string]bool{}
	answered := map[string]bool{}
	for i, raw := range req.Input {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return fmt.Sprintf("input[%d]: %v", i, err)
		}
		switch it.Type {
		case "reasoning":
			want, ok := s.issued[it.ID]
			if !ok || it.EncryptedContent == "" || it.EncryptedContent != want {
				return fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)
			}
			seenReasoning[it.ID] = true
		case "function_call":
			if rs, ok := s.needs[it.CallID]; ok && !seenReasoning[rs] {
				return fmt.Sprintf("Item 'fc_%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", it.CallID, rs)
			}
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				return fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID)
			}
			answered[it.CallID] = true
		case "message", "":
			if it.Role != "user" && it.Role != "assistant" && it.Role != "developer" && it.Role != "system" {
				return fmt.Sprintf("input[%d].role: invalid value %q", i, it.Role)
			}
		default:
			return fmt.Sprintf("input[%d].type: unsupported %q", i, it.Type)
		}
	}
	for id := range calls {
		if !answered[id] {
			return fmt.Sprintf("No tool output found for function call %s.", id)
		}
	}
	return ""
}

// output builds the reply's items and remembers what a later request must
// send back with them.
func (s *Server) output(reply Reply, n int) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	rs := ""
	if reply.Reasoning != "" {
		rs = fmt.Sprintf("rs_fake%03d", n)
		enc := fmt.Sprintf("gAAAAfake-%03d-%d", n, len(reply.Reasoning))
		s.issued[rs] = enc
		out = append(out, map[string]any{"id": rs, "type": "reasoning", "encrypted_content": enc,
			"summary": []map[string]string{{"type": "summary_text", "text": reply.Reasoning}}})
	}
	if reply.Text != "" {
		out = append(out, map[string]any{"id": fmt.Sprintf("msg_fake%03d", n), "type": "message", "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	for i, c := range reply.Calls {
		id := fmt.Sprintf("call_fake%03d_%d", n, i)
		if rs != "" {
			s.needs[id] = rs
		}
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		out = append(out, map[string]any{"id": "fc_" + id, "type": "function_call", "status": "completed",
			"call_id": id, "name": c.Name, "arguments": args})
	}
	return out
}

// usage counts chars/4 tokens; the input shared with the previous request
// (this fake's whole previous input, when the new one starts with it) is
// reported as cached, as OpenAI's automatic prefix cache would.
func (s *Server) usage(raw []byte, out []map[string]any) map[string]any {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(raw, &req)
	in := len(req.Input)
	outRaw, _ := json.Marshal(out)
	s.mu.Lock()
	cached := 0
	if s.prev > 0 && s.prev <= in {
		cached = s.prev / 4
	}
	s.prev = in
	s.mu.Unlock()
	return map[string]any{"input_tokens": in / 4, "input_tokens_details": map[string]int{"cached_tokens": cached},
		"output_tokens": len(outRaw) / 4, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": in/4 + len(outRaw)/4}
}

// stream writes the answer as Responses events: created, per item added,
// text deltas, done; then completed with the whole response.
func stream(w http.ResponseWriter, resp map[string]any, out []map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	seq := 0
	send := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		raw, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, raw)
		if flusher != nil {
			flusher.Flush()
		}
	}
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"], created["output"] = "in_progress", []any{}
	delete(created, "usage")
	send("response.created", map[string]any{"response": created})
	for i, it := range out {
		added := map[string]any{}
		for k, v := range it {
			if k != "encrypted_content" {
				added[k] = v
			}
		}
		send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		if it["type"] == "message" {
			text := it["content"].([]map[string]any)[0]["text"].(string)
			half := len(text) / 2
			for _, d := range []string{text[:half], text[half:]} {
				send("response.output_text.delta", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "delta": d})
			}
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": resp})
}
