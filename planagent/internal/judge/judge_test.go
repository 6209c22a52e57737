package judge

import (
	"errors"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// judgeOn is the real judge over the real client, pointed at a strict
// test server that answers a judge's request with reply and refuses any
// other.
func judgeOn(t *testing.T, reply llmtest.Reply) (*LLM, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if len(req.Messages) == 0 || !strings.HasPrefix(req.Messages[0].Content, Marker) {
			return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"not a judge request"}}`}
		}
		return reply
	})
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model"})
	return &LLM{Client: client}, srv
}

var task = Task{ID: "parser", Title: "Pratt parser", Description: "Rewrite the expression parser as a Pratt parser.",
	Acceptance: []string{"go test ./parser/..."}}

func tied() []Candidate {
	return []Candidate{
		{Attempt: 2, Diff: "diff --git a/parser.go b/parser.go\n+func parseExpr() { /* two */ }\n"},
		{Attempt: 3, Diff: "diff --git a/parser.go b/parser.go\n+func parseExpr() { /* three */ }\n"},
	}
}

func TestPick(t *testing.T) {
	t.Parallel()
	j, srv := judgeOn(t, llmtest.Calls(llmtest.Call("pick", `{"attempt": 3, "reason": "Three handles precedence in one table."}`)))
	v, err := j.Pick(t.Context(), task, tied())
	if err != nil {
		t.Fatal(err)
	}
	if v.Attempt != 3 || v.Reason != "Three handles precedence in one table." || v.Usage.Prompt == 0 {
		t.Fatalf("verdict %+v", v)
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Fatalf("the server rejected the judge's request: %v", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want one", len(reqs))
	}
	// The model saw the task, its acceptance, and both diffs under
	// their attempt numbers.
	user := reqs[0].Messages[1].Content
	for _, want := range []string{"Pratt parser", "go test ./parser/...", "=== attempt 2 ===", "/* two */", "=== attempt 3 ===", "/* three */"} {
		if !strings.Contains(user, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, user)
		}
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Function.Name != "pick" {
		t.Errorf("tools %+v, want pick", reqs[0].Tools)
	}
}

// A diff larger than its share is cut, saying so: the request stays
// within what a model's window holds whatever an attempt wrote.
func TestPickCapsDiffs(t *testing.T) {
	t.Parallel()
	j, srv := judgeOn(t, llmtest.Calls(llmtest.Call("pick", `{"attempt": 2, "reason": "smaller"}`)))
	j.MaxDiff = 4000
	cs := tied()
	cs[0].Diff = "diff --git a/big b/big\n" + strings.Repeat("+a line the attempt added\n", 10000)
	if _, err := j.Pick(t.Context(), task, cs); err != nil {
		t.Fatal(err)
	}
	user := srv.Requests()[0].Messages[1].Content
	if len(user) > 5000 || !strings.Contains(user, "[truncated: ") || !strings.Contains(user, "/* three */") {
		t.Fatalf("prompt of %d bytes (want the big diff cut, the small one whole):\n%.600s", len(user), user)
	}
}

func TestPickUnusable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply llmtest.Reply
		want  string
	}{
		{"text instead of a call", llmtest.Text("Attempt 3 is better."), "did not call pick"},
		{"arguments not JSON", llmtest.Calls(llmtest.Call("pick", `{"attempt": 3,`)), "not valid JSON"},
		{"an attempt not shown", llmtest.Calls(llmtest.Call("pick", `{"attempt": 1, "reason": "first"}`)), "picked attempt 1, not one of 2, 3"},
		{"not a whole number", llmtest.Calls(llmtest.Call("pick", `{"attempt": 2.5, "reason": "between"}`)), "not a whole number"},
		{"no reason", llmtest.Calls(llmtest.Call("pick", `{"attempt": 2, "reason": " "}`)), "without saying why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, _ := judgeOn(t, tt.reply)
			v, err := j.Pick(t.Context(), task, tied())
			if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want ErrUnusable saying %q", err, tt.want)
			}
			if v.Attempt != 0 || v.Usage.Prompt == 0 {
				t.Fatalf("verdict %+v: want no attempt, and the tokens the answer cost", v)
			}
		})
	}
}

// A model that cannot be reached is an error the caller falls back on,
// not ErrUnusable (nothing was answered).
func TestPickModelError(t *testing.T) {
	t.Parallel()
	j, _ := judgeOn(t, llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"no such model"}}`})
	_, err := j.Pick(t.Context(), task, tied())
	if err == nil || errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "no such model") {
		t.Fatalf("error %v", err)
	}
}

func TestPickNeedsTwo(t *testing.T) {
	t.Parallel()
	j, srv := judgeOn(t, llmtest.Text("unused"))
	if _, err := j.Pick(t.Context(), task, tied()[:1]); err == nil || !strings.Contains(err.Error(), "nothing to choose") {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests for one candidate", n)
	}
}
