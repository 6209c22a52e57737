package runview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// Every attempt of a task reaches status --json and summary.md: outcome,
// rank, the hint, tokens, cost, time, why it failed, what its acceptance
// commands printed and the ref of an attempt not merged.
func TestAttemptResults(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &planspec.Plan{Title: "T", Tasks: []planspec.Task{{ID: "a", Description: "a", Attempts: 3}, {ID: "b", Description: "b"}}}
	st, err := runrecord.NewState("r1", "goal", p, tokens.Usage{}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Info["a"] = &runrecord.TaskInfo{Results: []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Error: "acceptance command \"go test\" exited 1: want 7 | got 6", Tokens: protocol.Tokens{Prompt: 1_000_000}, Duration: 2 * time.Second,
			Ref: "refs/codeagent/r1/a/attempt-1", Acceptance: "$ go test\nwant 7 | got 6\n(exit 1)\n"},
		{Attempt: 2, Status: "completed", Rank: 1, Hinted: true, Tokens: protocol.Tokens{Prompt: 500_000, Completion: 1000}, Duration: 3 * time.Second},
	}}
	st.Info["b"] = &runrecord.TaskInfo{Results: []runrecord.AttemptResult{{Attempt: 1, Status: "completed", Rank: 1}}}
	r := Build(st, Options{Model: "m", Prices: Prices{"m": {Input: 1, Output: 2}}})
	got := r.Tasks[0].AttemptResults
	if len(got) != 2 || got[0].Status != "failed" || got[0].Rank != 0 || got[1].Rank != 1 || !got[1].Hinted || got[1].DurationMS != 3000 {
		t.Fatalf("attempt results %+v", got)
	}
	if c := got[0].CostUSD; c == nil || !near(*c, 1) {
		t.Errorf("attempt 1 cost %v, want $1 (1M prompt tokens at $1)", c)
	}
	raw, err := json.Marshal(r.Tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"attempt_results":[{"attempt":1,"status":"failed","error":"acceptance command \"go test\" exited 1: want 7 | got 6","ref":"refs/codeagent/r1/a/attempt-1","acceptance":"$ go test\nwant 7 | got 6\n(exit 1)\n","tokens":{"prompt":1000000,"completion":0,"total":1000000},"cost_usd":1,"duration_ms":2000},{"attempt":2,"status":"completed","hinted":true,"rank":1,`) {
		t.Errorf("status --json lacks the attempts: %s", raw)
	}
	md := Markdown(r)
	for _, want := range []string{"## Attempts",
		"| a | 1 | failed | - | no | 1000000/0 | $1.0000 | 2s | acceptance command \"go test\" exited 1: want 7 \\| got 6 (kept as `refs/codeagent/r1/a/attempt-1`) |",
		"| a | 2 | completed | 1 | yes | 500000/1000 | $0.5020 | 3s |  |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	// Side by side, the outcome says what the ranking weighed, and the
	// LLM judge's reason is the why of the attempt it picked.
	score := 812.5
	st.Info["a"].Results[1].Candidate = &runrecord.Candidate{Diff: 6, Score: &score}
	st.Info["a"].Results[1].JudgeReason = "clearer | shorter"
	md = Markdown(Build(st, Options{}))
	if want := "| a | 2 | completed (6 lines, judge 812.5) | 1 | yes | 500000/1000 | - | 3s | LLM judge: clearer \\| shorter |"; !strings.Contains(md, want) {
		t.Errorf("summary lacks %q:\n%s", want, md)
	}
	if strings.Contains(Attempts(r), "| b |") {
		t.Errorf("a task of one attempt is in the attempts table:\n%s", Attempts(r))
	}
}
