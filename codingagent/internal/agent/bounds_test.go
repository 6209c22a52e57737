package agent

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestOversizedArgumentsAreRefused: a call whose arguments pass the
// client's limit is not run; the model is told why in the call's answer
// and goes on; the file it meant to write is not written.
func TestOversizedArgumentsAreRefused(t *testing.T) {
	e := newEnv(t)
	big := map[string]any{"path": "big.txt", "content": strings.Repeat("z", llm.MaxToolArguments)}
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("write_file", big)),
		llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "big.txt", "content": "in parts\n"})),
		llmtest.Text("done"),
	)
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "big", Title: "write a big file"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || e.read("big.txt") != "in parts\n" {
		t.Fatalf("result %+v, big.txt %q", res, e.read("big.txt"))
	}
	req := e.srv.Requests()[1]
	call, answer := req.Messages[len(req.Messages)-2], req.Messages[len(req.Messages)-1]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Function.Arguments != "{}" {
		t.Errorf("the call sent back: %+v, want its arguments as {}", call.ToolCalls)
	}
	if !strings.HasPrefix(answer.Content, "ERROR: the arguments of this call were") || !strings.Contains(answer.Content, "not run") {
		t.Errorf("the model was told %q", answer.Content)
	}
}

// TestLongAnswerIsBounded: a 2 MB answer is kept (and reported) cut to
// maxContent with a note saying how much was cut.
func TestLongAnswerIsBounded(t *testing.T) {
	e := newEnv(t)
	answer := strings.Repeat("all done. ", 2<<20/10)
	e.srv.Enqueue(llmtest.Text(answer))
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "long", Title: "answer at length"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Completed || len(res.Answer) > maxContent || !strings.HasPrefix(res.Answer, "all done. all done.") {
		t.Fatalf("status %s, answer of %d bytes", res.Status, len(res.Answer))
	}
	if !strings.HasSuffix(res.Answer, " bytes]") || !strings.Contains(res.Answer, "[truncated: ") {
		t.Errorf("answer ends %q: no truncation note", res.Answer[len(res.Answer)-60:])
	}
}
