package llmclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

func sysMsg(s string) llm.Message { return llm.Message{Role: llm.RoleSystem, Content: s} }

func textMsg(s string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: s}
}

func callsMsg(calls ...[3]string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c[0], Name: c[1], Arguments: c[2]})
	}
	return m
}

func call(id string) [3]string { return [3]string{id, "read_file", `{"path":"a.go"}`} }

// brokenHistories are histories that truncation, compaction or an
// interrupt can leave behind — a tool message whose call was cut away, a
// call whose answer never came — each of which the real API rejects as it
// stands.
var brokenHistories = []struct {
	name    string
	history []llm.Message
	raw     string // the API's complaint about the unsanitised history
	want    []llm.Message
}{
	{
		name: "orphan tool messages after the history was truncated",
		history: []llm.Message{sysMsg("sys"), toolMsg("call_1", "old result"), toolMsg("call_2", "old result"),
			textMsg("Done with those."), userMsg("next task")},
		raw:  "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		want: []llm.Message{sysMsg("sys"), textMsg("Done with those."), userMsg("next task")},
	},
	{
		name: "answers kept after their invalid tool call was removed",
		history: []llm.Message{userMsg("go"), callsMsg(call("call_1"), [3]string{"call_2", "", `{}`}),
			toolMsg("call_1", "ok"), toolMsg("call_2", "error: unknown tool"), userMsg("continue")},
		raw:  "Missing required parameter: 'messages[1].tool_calls[1].function.name'.",
		want: []llm.Message{userMsg("go"), callsMsg(call("call_1")), toolMsg("call_1", "ok"), userMsg("continue")},
	},
	{
		name: "calls left unanswered by an interrupt",
		history: []llm.Message{userMsg("go"), callsMsg(call("call_1"), call("call_2"), call("call_3")),
			toolMsg("call_2", "ok"), userMsg("stop, do something else")},
		raw: "The following tool_call_ids did not have response messages: call_1, call_3",
		want: []llm.Message{userMsg("go"), callsMsg(call("call_1"), call("call_2"), call("call_3")),
			toolMsg("call_2", "ok"), toolMsg("call_1", llm.InterruptedResult), toolMsg("call_3", llm.InterruptedResult),
			userMsg("stop, do something else")},
	},
	{
		name:    "interrupted at the very end",
		history: []llm.Message{userMsg("go"), callsMsg(call("call_1"))},
		raw:     "The following tool_call_ids did not have response messages: call_1",
		want:    []llm.Message{userMsg("go"), callsMsg(call("call_1")), toolMsg("call_1", llm.InterruptedResult)},
	},
	{
		name: "empty tool result and empty arguments",
		history: []llm.Message{userMsg("go"), callsMsg([3]string{"call_1", "list_dir", ""}), toolMsg("call_1", ""),
			{Role: llm.RoleAssistant}},
		raw: "Missing required parameter: 'messages[1].tool_calls[0].function.arguments'.",
		want: []llm.Message{userMsg("go"), callsMsg([3]string{"call_1", "list_dir", "{}"}), toolMsg("call_1", llm.EmptyContent),
			textMsg(llm.NoContent)},
	},
	{
		name: "answer repeated and answer to an older call",
		history: []llm.Message{userMsg("go"), callsMsg(call("call_1")), toolMsg("call_1", "ok"), textMsg("next"),
			callsMsg(call("call_2")), toolMsg("call_2", "ok"), toolMsg("call_2", "again"), toolMsg("call_1", "late")},
		raw: "'tool_call_id' of 'call_1' not found in 'tool_calls' of previous message",
		want: []llm.Message{userMsg("go"), callsMsg(call("call_1")), toolMsg("call_1", "ok"), textMsg("next"),
			callsMsg(call("call_2")), toolMsg("call_2", "ok")},
	},
}

func TestSanitize(t *testing.T) {
	for _, tt := range brokenHistories {
		t.Run(tt.name, func(t *testing.T) {
			before := deepCopy(t, tt.history)
			got := llm.Sanitize(tt.history)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sanitize =\n%s\nwant\n%s", dump(got), dump(tt.want))
			}
			if !reflect.DeepEqual(tt.history, before) {
				t.Errorf("Sanitize modified its input:\n%s", dump(tt.history))
			}
		})
	}
}

// TestSanitizedHistoryIsAccepted sends each broken history to the strict
// server twice: as it is, with go-openai directly (rejected with the real
// API's text), and through the client, which sanitises (accepted).
func TestSanitizedHistoryIsAccepted(t *testing.T) {
	for _, tt := range brokenHistories {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.WithKey(testKey))
			cfg := openai.DefaultConfig(testKey)
			cfg.BaseURL = s.URL
			_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(t.Context(),
				openai.ChatCompletionRequest{Model: "test-model", Messages: llmclient.WireMessages(tt.history), Tools: llmclient.WireTools(tools)})
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, tt.raw) {
				t.Fatalf("raw history: err = %v, want HTTP 400 containing %q", err, tt.raw)
			}

			s.Enqueue(llmtest.Text("fine"))
			if _, err := newClient(t, s).Chat(t.Context(), llm.Request{Messages: tt.history, Tools: tools}, nil); err != nil {
				t.Fatalf("sanitised history: %v", err)
			}
			if r := s.Rejections(); len(r) != 1 {
				t.Errorf("rejections = %q, want only the raw request's", r)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	msgs := []llm.Message{userMsg(strings.Repeat("a", 10)), callsMsg([3]string{"c", "read_file", `{"p":1}`})}
	if got, want := llm.EstimateTokens(msgs), (10+9+7+3)/4; got != want {
		t.Errorf("EstimateTokens = %d, want %d", got, want)
	}
	if got := llm.EstimateTokens(nil); got != 0 {
		t.Errorf("EstimateTokens(nil) = %d", got)
	}
}

// FuzzSanitize builds histories from bytes and checks that what Sanitize
// returns, after go-openai's JSON encoding, passes the strict server's
// validation; that it keeps every non-tool message in order; and that it
// leaves its input alone.
func FuzzSanitize(f *testing.F) {
	f.Add([]byte{0, 2, 3, 3, 0})
	f.Add([]byte{3, 3, 1, 0})
	f.Add([]byte{2, 0x15, 0xff, 3, 0x10, 3, 0x11, 0})
	f.Add([]byte{2, 2, 3, 5, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		history := historyFromBytes(data)
		before := deepCopy(t, history)
		got := llm.Sanitize(history)
		if !reflect.DeepEqual(history, before) {
			t.Fatalf("Sanitize modified its input")
		}
		if nonTool(got) != nonTool(history) {
			t.Fatalf("Sanitize dropped non-tool messages:\nin  %s\nout %s", dump(history), dump(got))
		}
		if len(got) == 0 {
			return
		}
		raw, err := json.Marshal(openai.ChatCompletionRequest{Model: "m", Messages: llmclient.WireMessages(got), Tools: llmclient.WireTools(tools)})
		if err != nil {
			t.Fatal(err)
		}
		var sent llmtest.Request
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatal(err)
		}
		if err := llmtest.Validate(sent); err != nil {
			t.Fatalf("sanitised history rejected: %v\nin  %s\nout %s", err, dump(history), dump(got))
		}
	})
}

// historyFromBytes reads one message per step: the low 3 bits choose the
// kind, the rest choose ids, emptiness and counts.
func historyFromBytes(data []byte) []llm.Message {
	var msgs []llm.Message
	id := func(b byte) string {
		if b%5 == 4 {
			return ""
		}
		return fmt.Sprintf("c%d", b%5)
	}
	text := func(b byte) string {
		if b&0x80 != 0 {
			return ""
		}
		return "t"
	}
	for i := 0; i < len(data); i++ {
		b := data[i]
		switch b & 7 {
		case 0:
			msgs = append(msgs, userMsg(text(b)))
		case 1, 5:
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: text(b)})
		case 2:
			m := llm.Message{Role: llm.RoleAssistant, Content: text(b)}
			for n := int(b>>3) % 4; n > 0 && i+1 < len(data); n-- {
				i++
				c := data[i]
				name := "read_file"
				if c&0x40 != 0 {
					name = ""
				}
				args := `{"path":"x"}`
				if c&0x20 != 0 {
					args = ""
				}
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id(c), Name: name, Arguments: args})
			}
			msgs = append(msgs, m)
		case 3, 6:
			msgs = append(msgs, toolMsg(id(b>>3), text(b)))
		case 4:
			msgs = append(msgs, sysMsg(text(b)))
		case 7:
			msgs = append(msgs, llm.Message{Role: llm.RoleDeveloper, Content: text(b)})
		}
	}
	return msgs
}

func nonTool(msgs []llm.Message) (roles string) {
	for _, m := range msgs {
		if m.Role != llm.RoleTool {
			roles += m.Role + " "
		}
	}
	return roles
}

func deepCopy(t testing.TB, msgs []llm.Message) []llm.Message {
	raw, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var out []llm.Message
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if msgs == nil {
		return nil
	}
	return out
}

func dump(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s %q", m.Role, m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " call(%s %s %s)", c.ID, c.Name, c.Arguments)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " answers %s", m.ToolCallID)
		}
		b.WriteString("\n")
	}
	return b.String()
}
