package orchestrator

import (
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// deciderOn is the real decider over the real client, pointed at a strict
// test server that answers every request with reply.
func deciderOn(t *testing.T, reply llmtest.Reply) (*LLMDecider, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if !strings.HasPrefix(req.Messages[0].Content, DeciderMarker) {
			return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"not a decider request"}}`}
		}
		return reply
	})
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model"})
	return &LLMDecider{Client: client, Model: "test-model"}, srv
}

func decide(args string) llmtest.Reply { return llmtest.Calls(llmtest.Call("decide", args)) }

func TestLLMDecider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		reply       llmtest.Reply
		wantAction  Choice
		wantInvalid string
		check       func(t *testing.T, v Verdict)
	}{
		{name: "retry with hints", reply: decide(`{"action":"retry","reason":"typo","hints":["fix the import"]}`), wantAction: "retry",
			check: func(t *testing.T, v Verdict) {
				if len(v.Hints) != 1 || v.Hints[0] != "fix the import" || v.Reason != "typo" || v.Usage.Prompt == 0 {
					t.Errorf("verdict %+v", v)
				}
			}},
		{name: "replan with tasks", reply: decide(`{"action":"replan","reason":"wrong approach","tasks":[{"id":"n1","description":"do it differently","dependencies":[]}]}`),
			wantAction: "replan", check: func(t *testing.T, v Verdict) {
				if len(v.Replan) != 1 || v.Replan[0].ID != "n1" {
					t.Errorf("replan %+v", v.Replan)
				}
			}},
		{name: "abort", reply: decide(`{"action":"abort","reason":"hopeless"}`), wantAction: "abort"},
		{name: "unknown action", reply: decide(`{"action":"shrug","reason":"?"}`), wantAction: "continue", wantInvalid: `unknown action "shrug"`},
		{name: "arguments not JSON", reply: decide(`{"action":`), wantAction: "continue", wantInvalid: "not valid JSON"},
		{name: "text instead of a call", reply: llmtest.Text("I would retry."), wantAction: "continue", wantInvalid: "did not call decide"},
		{name: "model unreachable", reply: llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"bad model"}}`}, wantAction: "continue", wantInvalid: "bad model"},
		{name: "reason n/a", reply: decide(`{"action":"continue","reason":"n/a"}`), wantAction: "continue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, srv := deciderOn(t, tt.reply)
			v := d.Decide(t.Context(), Failure{Task: taskgraph.Task{ID: "t1", Description: "x", Attempts: 1},
				Error: "compile error", PlanSummary: "[!] t1: x", AttemptsLeft: 1})
			if v.Action != tt.wantAction || !strings.Contains(v.Invalid, tt.wantInvalid) || (tt.wantInvalid == "") != (v.Invalid == "") {
				t.Fatalf("verdict %+v, want action %s invalid %q", v, tt.wantAction, tt.wantInvalid)
			}
			if tt.check != nil {
				tt.check(t, v)
			}
			// Every verdict says why, in words a person reads in the summary.
			if r := strings.TrimSpace(v.Reason); r == "" || strings.EqualFold(r, "n/a") {
				t.Errorf("verdict without a reason: %+v", v)
			}
			if r := srv.Rejections(); tt.reply.Status == 0 && len(r) > 0 {
				t.Errorf("the server rejected the decider's request: %v", r)
			}
			if reqs := srv.Requests(); len(reqs) > 0 && !strings.Contains(reqs[0].Messages[1].Content, "compile error") {
				t.Errorf("the decider was not told the error: %q", reqs[0].Messages[1].Content)
			}
		})
	}
}

// TestDriveDecisions runs a plan whose task "bad" fails once, with the real
// decider answering, and checks that each decision is applied.
func TestDriveDecisions(t *testing.T) {
	t.Parallel()
	tasks := []plan.Task{
		{ID: "bad", Description: "fails on its first attempt"},
		{ID: "child", Description: "after bad", Dependencies: []string{"bad"}},
		{ID: "other", Description: "independent"},
	}
	tests := []struct {
		name       string
		answer     string
		want       map[string]taskgraph.Status
		wantRun    runrecord.RunStatus
		wantAction string
		check      func(t *testing.T, st *runrecord.State, cmds map[string][]*protocol.Command)
	}{
		{
			name:    "retry carries the hints to the next attempt",
			answer:  `{"action":"retry","reason":"fixable","hints":["import fmt"]}`,
			want:    map[string]taskgraph.Status{"bad": taskgraph.Completed, "child": taskgraph.Completed, "other": taskgraph.Completed},
			wantRun: runrecord.RunCompleted, wantAction: "retry",
			check: func(t *testing.T, _ *runrecord.State, cmds map[string][]*protocol.Command) {
				if len(cmds["bad"]) != 2 {
					t.Fatalf("bad sent %d times, want 2", len(cmds["bad"]))
				}
				second := cmds["bad"][1]
				if second.Attempt != 2 || !strings.Contains(strings.Join(second.Hints, "\n"), "import fmt") ||
					!strings.Contains(strings.Join(second.Hints, "\n"), "compile error") {
					t.Errorf("second attempt: attempt %d hints %q", second.Attempt, second.Hints)
				}
			},
		},
		{
			// Every unfinished task is replaced: "child" is dropped, "other" is given again.
			name: "replan replaces the unfinished tasks",
			answer: `{"action":"replan","reason":"split it","tasks":[{"id":"bad-a","description":"first half","dependencies":[]},` +
				`{"id":"bad-b","description":"second half","dependencies":["bad-a"]},{"id":"other","description":"independent","dependencies":[]}]}`,
			want:    map[string]taskgraph.Status{"bad-a": taskgraph.Completed, "bad-b": taskgraph.Completed, "other": taskgraph.Completed},
			wantRun: runrecord.RunCompleted, wantAction: "replan",
			check: func(t *testing.T, st *runrecord.State, _ map[string][]*protocol.Command) {
				if len(st.Tasks) != 3 {
					t.Errorf("tasks after the replan: %+v", st.Tasks)
				}
			},
		},
		{
			name:    "an invalid replan is refused: continue without the task",
			answer:  `{"action":"replan","reason":"x","tasks":[{"id":"summary","description":"overwrites the run summary","dependencies":[]}]}`,
			want:    map[string]taskgraph.Status{"bad": taskgraph.Failed, "child": taskgraph.Skipped, "other": taskgraph.Completed},
			wantRun: runrecord.RunFailed, wantAction: "continue",
			check: func(t *testing.T, st *runrecord.State, _ map[string][]*protocol.Command) {
				if r := st.Decisions[0].Reason; !strings.Contains(r, "replan rejected") || !strings.Contains(r, `"summary" is reserved`) {
					t.Errorf("reason %q", r)
				}
			},
		},
		{
			name:    "a cyclic replan is refused",
			answer:  `{"action":"replan","reason":"x","tasks":[{"id":"p","description":"p","dependencies":["q"]},{"id":"q","description":"q","dependencies":["p"]}]}`,
			want:    map[string]taskgraph.Status{"bad": taskgraph.Failed, "child": taskgraph.Skipped, "other": taskgraph.Completed},
			wantRun: runrecord.RunFailed, wantAction: "continue",
		},
		{
			name:    "abort stops dispatching",
			answer:  `{"action":"abort","reason":"nothing works"}`,
			want:    map[string]taskgraph.Status{"bad": taskgraph.Failed, "child": taskgraph.Skipped, "other": taskgraph.Pending},
			wantRun: runrecord.RunAborted, wantAction: "abort",
		},
		{
			name:    "an unusable decision continues without the task",
			answer:  `{"action":"maybe"}`,
			want:    map[string]taskgraph.Status{"bad": taskgraph.Failed, "child": taskgraph.Skipped, "other": taskgraph.Completed},
			wantRun: runrecord.RunFailed, wantAction: "continue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			var mu sync.Mutex
			cmds := map[string][]*protocol.Command{}
			rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
				mu.Lock()
				cmds[c.ID] = append(cmds[c.ID], c)
				mu.Unlock()
				r := completed(c)
				if c.ID == "bad" && c.Attempt == 1 {
					r.Status, r.Error = protocol.StatusFailed, "compile error"
				}
				return r
			})
			d, _ := deciderOn(t, decide(tt.answer))
			st := newTestState(t, tasks...)
			if err := New(Options{Layout: l, Runtime: rt, Decider: d, MaxRetries: 1}).Drive(t.Context(), st); err != nil {
				t.Fatal(err)
			}
			got := status(st)
			for id, want := range tt.want {
				if got[id] != want {
					t.Errorf("%s = %s, want %s (all: %v)", id, got[id], want, got)
				}
			}
			if st.Status != tt.wantRun {
				t.Errorf("run %s, want %s", st.Status, tt.wantRun)
			}
			if len(st.Decisions) != 1 || st.Decisions[0].Action != tt.wantAction {
				t.Fatalf("decisions %+v, want one %s", st.Decisions, tt.wantAction)
			}
			if loaded, err := runrecord.LoadState(l, st.RunID, false); err != nil || len(loaded.Decisions) != 1 {
				t.Errorf("decision not persisted: %v %+v", err, loaded)
			}
			if tt.check != nil {
				mu.Lock()
				defer mu.Unlock()
				tt.check(t, st, cmds)
			}
		})
	}
}
