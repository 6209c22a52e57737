package llmclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

// responsesDialect speaks OpenAI's Responses API (/v1/responses), the only
// API of the *-codex models, statelessly: store false, every turn sends the
// whole history, and the reasoning items of earlier turns go back with
// their encrypted content (include reasoning.encrypted_content), since the
// server keeps nothing to look an rs_ id up in.
type responsesDialect struct {
	api  *openai.Client
	cfg  *Config
	idle time.Duration
}

func newResponses(c *Client, _ HTTPDoer) *responsesDialect {
	// The chat client already sends through the recording doer, to the
	// same base URL: /responses sits next to /chat/completions.
	return &responsesDialect{api: c.api, cfg: &c.cfg, idle: c.idle}
}

func (*responsesDialect) Provider() string { return "openai" }

// responsesState is what an assistant message carries back: the reasoning
// items of its turn, verbatim as the server sent them (id, summary,
// encrypted_content). It is kept in Message.ProviderState under
// "responses".
type responsesState struct {
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
}

func (d *responsesDialect) request(r DialectRequest) openai.CreateResponseRequest {
	store := false
	req := openai.CreateResponseRequest{
		Model:           r.Model,
		Store:           &store,
		Include:         []openai.ResponseInclude{openai.ResponseIncludeReasoningEncryptedContent},
		MaxOutputTokens: d.cfg.MaxTokens,
	}
	if e := d.cfg.ReasoningEffort; e != "" {
		req.Reasoning = &openai.ResponseReasoning{Effort: e}
	}
	req.Instructions, req.Input = responsesInput(r.Sent)
	for _, t := range r.Tools {
		req.Tools = append(req.Tools, openai.NewResponseFunctionTool(openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		}))
	}
	return req
}

// responsesInput converts a sanitised history: leading system messages
// become instructions, later ones developer messages; assistant turns
// become their reasoning items, an output message and function_call items;
// tool messages function_call_output items.
func responsesInput(msgs []llm.Message) (string, []any) {
	var instructions []string
	i := 0
	for ; i < len(msgs) && (msgs[i].Role == llm.RoleSystem || msgs[i].Role == llm.RoleDeveloper); i++ {
		instructions = append(instructions, msgs[i].Content)
	}
	items := []any{}
	for _, m := range msgs[i:] {
		switch m.Role {
		case llm.RoleAssistant:
			var st responsesState
			if ProviderState(m, llm.APIResponses, &st) {
				for _, raw := range st.Reasoning {
					items = append(items, raw)
				}
			}
			if text := m.Content; strings.TrimSpace(text) != "" && !(text == llm.NoContent && len(m.ToolCalls) > 0) {
				items = append(items, map[string]any{"type": "message", "role": "assistant",
					"content": []map[string]string{{"type": "output_text", "text": text}}})
			}
			for _, tc := range m.ToolCalls {
				items = append(items, map[string]string{"type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": tc.Arguments})
			}
		case llm.RoleTool:
			items = append(items, openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		case llm.RoleSystem, llm.RoleDeveloper:
			items = append(items, openai.ResponseInputMessage{Type: "message", Role: llm.RoleDeveloper, Content: m.Content})
		default:
			items = append(items, openai.ResponseInputMessage{Type: "message", Role: llm.RoleUser, Content: m.Content})
		}
	}
	return strings.Join(instructions, "\n\n"), items
}

func (d *responsesDialect) Send(ctx context.Context, r DialectRequest) (*llm.Response, error) {
	req := d.request(r)
	if !r.Stream {
		resp, err := d.api.CreateResponse(ctx, req)
		if err != nil {
			return nil, err
		}
		items := make([]json.RawMessage, 0, len(resp.Output))
		for _, it := range resp.Output {
			raw, err := json.Marshal(it)
			if err != nil {
				return nil, fmt.Errorf("read the response's output: %w", err)
			}
			items = append(items, raw)
		}
		return responsesAnswer(&resp, items)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(d.idle, func() { cancel(ErrIdle) })
	defer idle.Stop()
	st, err := d.api.CreateResponseStream(ctx, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	done := map[int]json.RawMessage{} // output_index -> finished item
	var final *openai.CreateResponseResponse
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, IdleOr(ctx, err)
		}
		idle.Reset(d.idle)
		switch ev.Type {
		case openai.ResponseStreamEventOutputTextDelta:
			if ev.Delta != "" && r.OnToken != nil {
				r.OnToken(ev.Delta)
			}
		case openai.ResponseStreamEventOutputItemDone:
			// The finished item, encrypted_content included, is only
			// here: go-openai's item type has no field for it.
			var e struct {
				Item json.RawMessage `json:"item"`
			}
			if json.Unmarshal(ev.Raw, &e) == nil && len(e.Item) > 0 {
				done[ev.OutputIndex] = e.Item
			}
		case openai.ResponseStreamEventCompleted, openai.ResponseStreamEventIncomplete, openai.ResponseStreamEventFailed:
			final = ev.Response
		case openai.ResponseStreamEventError:
			return nil, &responsesFailure{code: ev.Code, message: ev.Message}
		}
	}
	if final == nil {
		return nil, ErrCutStream
	}
	idx := make([]int, 0, len(done))
	for i := range done {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	items := make([]json.RawMessage, 0, len(idx))
	for _, i := range idx {
		items = append(items, done[i])
	}
	if len(items) == 0 {
		for _, it := range final.Output {
			raw, _ := json.Marshal(it) // decoded from JSON: cannot fail
			items = append(items, raw)
		}
	}
	return responsesAnswer(final, items)
}

// responsesFailure is a response the server ended with an error (status
// failed, or an error event in the stream).
type responsesFailure struct{ code, message string }

func (f *responsesFailure) Error() string { return f.code + ": " + f.message }

// responsesAnswer converts the finished response and its output items.
func responsesAnswer(resp *openai.CreateResponseResponse, items []json.RawMessage) (*llm.Response, error) {
	if resp.Status == openai.ResponseStatusFailed {
		f := &responsesFailure{code: "server_error", message: "the response failed"}
		if resp.Error != nil {
			f.code, f.message = resp.Error.Code, resp.Error.Message
		}
		return nil, f
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	var text, reasoning strings.Builder
	var st responsesState
	for _, raw := range items {
		var it struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Type == "output_text" {
					text.WriteString(c.Text)
				}
			}
		case "reasoning":
			for _, s := range it.Summary {
				reasoning.WriteString(s.Text)
			}
			st.Reasoning = append(st.Reasoning, raw)
		case "function_call":
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		}
	}
	msg.Content, msg.ReasoningContent = text.String(), reasoning.String()
	if len(st.Reasoning) > 0 {
		msg.ProviderState = WithProviderState(llm.APIResponses, st)
	}
	finish := "stop"
	switch {
	case len(msg.ToolCalls) > 0:
		finish = "tool_calls"
	case resp.Status == openai.ResponseStatusIncomplete:
		finish = "length"
		if resp.IncompleteDetails != nil && resp.IncompleteDetails.Reason == "content_filter" {
			finish = "content_filter"
		}
	}
	var usage llm.Usage
	if u := resp.Usage; u != nil {
		// input_tokens includes the cached ones, as prompt_tokens does.
		usage = llm.Usage{Prompt: u.InputTokens, Completion: u.OutputTokens}
		if u.InputTokensDetails != nil {
			usage.Cached = u.InputTokensDetails.CachedTokens
		}
	}
	return &llm.Response{Message: msg, FinishReason: finish, Usage: usage}, nil
}

// classify reads go-openai's errors and a failed response.
func (*responsesDialect) Classify(err error, e *llm.Error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var failed *responsesFailure
	switch {
	case errors.As(err, &apiErr):
		e.Status, e.Message = apiErr.HTTPStatusCode, apiErr.Message
		if code, ok := apiErr.Code.(string); ok {
			e.Code = code
		}
	case errors.As(err, &reqErr):
		e.Status, e.Message = reqErr.HTTPStatusCode, BodyText(reqErr.Body)
	case errors.As(err, &failed):
		// Inside a 200: only the server's own failures are worth another try.
		e.Code, e.Message = failed.code, failed.message
		e.Retriable = failed.code == "server_error" || failed.code == "rate_limit_exceeded"
		return true
	default:
		return false
	}
	return true
}
