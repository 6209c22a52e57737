package llm_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
)

// A message's JSON is the API's shape, so session files written before the
// project had its own types (go-openai's, with an index on calls) still read.
func TestMessageJSONIsTheWireShape(t *testing.T) {
	old := `{"role":"assistant","content":"Reading.","tool_calls":[{"index":0,"id":"call_1","type":"function",` +
		`"function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]}`
	var m llm.Message
	if err := json.Unmarshal([]byte(old), &m); err != nil {
		t.Fatal(err)
	}
	want := llm.Message{Role: llm.RoleAssistant, Content: "Reading.",
		ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`}}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("decoded %+v, want %+v", m, want)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const wire = `{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_1","type":"function",` +
		`"function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]}`
	if string(raw) != wire {
		t.Errorf("encoded\n%s\nwant\n%s", raw, wire)
	}
}
