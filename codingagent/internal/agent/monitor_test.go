package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// scriptedRounds answers summary requests with a summary that carries the
// secret when the transcript had it, and task requests with rounds of bulky
// thinking plus a tool call, then "finished".
type scriptedRounds struct {
	rounds   int
	bulk     int // chars of content per round
	n        atomic.Int64
	mu       sync.Mutex
	summText []string // transcripts the summariser saw
}

func (s *scriptedRounds) reply(req llmtest.Request) llmtest.Reply {
	if isSummaryRequest(req) {
		transcript := req.Messages[1].Content
		s.mu.Lock()
		s.summText = append(s.summText, transcript)
		s.mu.Unlock()
		if strings.Contains(transcript, "the secret is 4242") {
			return llmtest.Text("- Ran echo and learned: the secret is 4242.\n- Listed several directories.")
		}
		return llmtest.Text("- Listed several directories.")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleUser && last.Content == "What is the secret?" {
		if strings.Contains(allText(req), "4242") {
			return llmtest.Text("4242")
		}
		return llmtest.Text("unknown")
	}
	c := int(s.n.Add(1))
	switch {
	case c == 1:
		return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "echo the secret is 4242"}))
	case c <= s.rounds:
		r := llmtest.Calls(llmtest.Call("list_dir", map[string]any{"path": fmt.Sprintf("dir%d", c)}))
		r.Content = fmt.Sprintf("Round %d. ", c) + strings.Repeat("pondering ", s.bulk/10)
		return r
	}
	return llmtest.Text("finished")
}

func TestCompactionWithSmallWindow(t *testing.T) {
	e := newEnv(t, llmtest.WithContextWindow(3000))
	script := &scriptedRounds{rounds: 9, bulk: 2000}
	e.srv.Handle(script.reply)
	session := filepath.Join(t.TempDir(), "s.jsonl")
	a := e.agent(func(o *Options) {
		o.ContextWindow, o.ReservedOutput, o.KeepMessages = 3000, 500, 4
		o.SessionPath = session
		o.SummaryModel = "cheap-model"
	})
	res, err := a.RunTask(t.Context(), Task{ID: "long", Title: "A long task"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Completed || res.Answer != "finished" {
		t.Fatalf("result = %+v", res)
	}
	e.noRejections() // no request over the window, no orphan tool message

	var summaries []events.Event
	for _, ev := range e.events.ofType(events.Compaction) {
		if ev.Status == "summary" {
			summaries = append(summaries, ev)
			before, after := ev.Data["tokens_before"].(int), ev.Data["tokens_after"].(int)
			if after >= before || before <= int(0.9*2500) {
				t.Errorf("compaction %d → %d tokens: not triggered above the threshold or did not shrink", before, after)
			}
		}
	}
	if len(summaries) == 0 {
		t.Fatal("no summary compaction happened")
	}

	if !strings.Contains(script.summText[0], "the secret is 4242") {
		t.Errorf("the first summary did not see the earliest messages")
	}
	compacted := 0
	for i, req := range e.srv.Requests() {
		if isSummaryRequest(req) {
			if req.Model != "cheap-model" {
				t.Errorf("summary request %d used model %q", i, req.Model)
			}
			continue
		}
		if len(req.Messages) < 3 || !strings.HasPrefix(req.Messages[2].Content, summaryPrefix) {
			continue
		}
		compacted++
		if !strings.HasPrefix(req.Messages[1].Content, "# Task long") {
			t.Errorf("request %d: the task message was not kept first", i)
		}
		if req.Messages[3].Role == llm.RoleTool {
			t.Errorf("request %d: the cut separated tool answers from their call", i)
		}
	}
	if compacted == 0 {
		t.Fatal("no request carried a summary")
	}

	// A later turn still knows what only the summary holds.
	res, err = a.Send(t.Context(), "What is the secret?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "4242" {
		t.Errorf("later turn answered %q: the summary's fact was not in the request", res.Answer)
	}
	e.noRejections()

	// The compaction was persisted: a restarted agent sees the same history.
	want := a.Messages()
	_ = a.Close()
	b := e.agent(func(o *Options) { o.SessionPath = session })
	got := b.Messages()
	if len(got) != len(want) {
		t.Fatalf("replayed history has %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Content != want[i].Content || got[i].ToolCallID != want[i].ToolCallID {
			t.Errorf("replayed message %d differs: %+v vs %+v", i, got[i], want[i])
		}
	}
}

func TestMaskingAloneMakesRoom(t *testing.T) {
	e := newEnv(t, llmtest.WithContextWindow(3000))
	var n atomic.Int64
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if isSummaryRequest(req) {
			t.Error("summarised although masking was enough")
			return llmtest.Text("- summary")
		}
		if c := n.Add(1); c <= 7 {
			// About 1900 chars: under the shell cut, so only masking shrinks it.
			return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": fmt.Sprintf("seq 1 500; echo round %d", c)}))
		}
		return llmtest.Text("finished")
	})
	res, err := e.agent(func(o *Options) { o.ContextWindow, o.ReservedOutput, o.KeepMessages = 3000, 500, 4 }).
		RunTask(t.Context(), Task{ID: "bulky"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed {
		t.Fatalf("result = %+v", res)
	}
	masks := 0
	for _, ev := range e.events.ofType(events.Compaction) {
		if ev.Status != "mask" {
			t.Errorf("unexpected compaction: %s", ev.Text)
			continue
		}
		masks++
		if ev.Data["tokens_after"].(int) >= ev.Data["tokens_before"].(int) {
			t.Errorf("masking did not shrink: %s", ev.Text)
		}
	}
	if masks == 0 {
		t.Fatal("no masking happened")
	}
	last := e.srv.Requests()[len(e.srv.Requests())-1]
	if !strings.Contains(allText(last), "[shell_exec output omitted to save context") {
		t.Errorf("the last request carries no masked result")
	}
}

func TestContextLengthErrorCompactsAndRetries(t *testing.T) {
	e := newEnv(t, llmtest.WithContextWindow(1500))
	script := &scriptedRounds{rounds: 6, bulk: 1500}
	e.srv.Handle(script.reply)
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "overflow"}) // monitor thinks the window is 128k
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Completed || res.Answer != "finished" {
		t.Fatalf("result = %+v", res)
	}
	rejections := e.srv.Rejections()
	if len(rejections) == 0 {
		t.Fatal("the server never refused a request: the test did not exercise the retry")
	}
	for _, r := range rejections {
		if !strings.Contains(r, "maximum context length") {
			t.Errorf("unexpected rejection: %s", r)
		}
	}
	summaries := 0
	for _, ev := range e.events.ofType(events.Compaction) {
		if ev.Status == "summary" {
			summaries++
		}
	}
	if summaries != len(rejections) {
		t.Errorf("%d summaries for %d context-length errors, want one each", summaries, len(rejections))
	}
}

func TestSummaryRangeKeepsUnits(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Content: "task"}
	asst := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "read_file", Arguments: "{}"})
		}
		return m
	}
	tool := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "x"}
	}
	// 0 task, 1 asst(a,b), 2 a, 3 b, 4 asst(c,d,e), 5 c, 6 d, 7 e, 8 asst(f), 9 f
	msgs := []llm.Message{user, asst("a", "b"), tool("a"), tool("b"), asst("c", "d", "e"),
		tool("c"), tool("d"), tool("e"), asst("f"), tool("f")}
	tests := []struct {
		keep           int
		wantStart, end int
		ok             bool
	}{
		{keep: 1, wantStart: 1, end: 8, ok: true},  // keep the last unit whole
		{keep: 4, wantStart: 1, end: 4, ok: true},  // index 6 is a tool answer: back to its call
		{keep: 2, wantStart: 1, end: 8, ok: true},  // exactly a unit boundary
		{keep: 9, wantStart: 0, end: 0, ok: false}, // nothing before the kept part
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("keep %d", tt.keep), func(t *testing.T) {
			a := &Agent{hist: history{msgs: msgs, pinned: 0}}
			start, end, ok := a.summaryRange(tt.keep)
			if start != tt.wantStart || end != tt.end || ok != tt.ok {
				t.Errorf("summaryRange(%d) = %d, %d, %v; want %d, %d, %v", tt.keep, start, end, ok, tt.wantStart, tt.end, tt.ok)
			}
		})
	}
}
