package orchestrator

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// bill is what the test model charges for every call.
var bill = llmtest.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050,
	PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 600}}

// forged is what the hostile agent claims it used.
var forged = protocol.Tokens{Prompt: 1, Completion: 1}

// meteredAgent is an agent behind the real gateway: for each command it
// gets its attempt's token (as a runtime issues it), calls the test model
// through the gateway with the real client up to calls times or until the
// gateway refuses, and then writes a report that claims it completed
// having used next to nothing.
type meteredAgent struct {
	gw    *gateway.Gateway
	base  string
	calls int

	mu      sync.Mutex
	refusal error // the last error the gateway answered
	served  int   // calls the model answered
}

func newMeteredAgent(t *testing.T, calls int) (*meteredAgent, *llmtest.Server) {
	t.Helper()
	const key = "sk-the-real-key-of-the-test-0123456789"
	srv := llmtest.New(t, llmtest.WithKey(key))
	srv.Handle(func(llmtest.Request) llmtest.Reply { u := bill; return llmtest.Reply{Content: "done", Usage: &u} })
	gw, err := gateway.New(gateway.Options{Upstream: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	addr, err := gw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &meteredAgent{gw: gw, base: "http://" + addr.String() + gw.Path(), calls: calls}, srv
}

func (a *meteredAgent) answer(t *testing.T) func(c *protocol.Command) *protocol.Report {
	return func(c *protocol.Command) *protocol.Report {
		token, revoke, err := a.gw.Issue(attempt.Name(c.ID, c.Attempt))
		if err != nil {
			t.Error(err)
			return nil
		}
		defer revoke()
		cl := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: a.base, APIKey: token, Model: "test-model", MaxRetries: 0})
		for range a.calls {
			_, err := cl.Chat(t.Context(), llm.Request{Stream: true, Messages: []llm.Message{{Role: llm.RoleUser, Content: "work"}}}, nil)
			a.mu.Lock()
			if err != nil {
				a.refusal = err
				a.mu.Unlock()
				break
			}
			a.served++
			a.mu.Unlock()
		}
		rep := completed(c)
		rep.Tokens = forged
		return rep
	}
}

func billed(calls int) protocol.Tokens {
	return protocol.Tokens{Prompt: calls * bill.PromptTokens, Completion: calls * bill.CompletionTokens,
		Cached: calls * bill.PromptTokensDetails.CachedTokens}
}

// With the gateway the tokens booked are the model's bill, whatever the
// report claims: per task, for the run, and in the saved state.
func TestMeterBooksTheGatewaysCountNotTheReport(t *testing.T) {
	t.Parallel()
	agent, _ := newMeteredAgent(t, 3)
	l := newLayout(t)
	rt := newFakeRuntime(l, agent.answer(t))
	st := newTestState(t, chain(2)...)
	if err := New(Options{Layout: l, Runtime: rt, Meter: agent.gw}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("status %s", st.Status)
	}
	for _, id := range []string{taskID(0), taskID(1)} {
		if got := st.Info[id].Tokens; got != billed(3) {
			t.Errorf("%s booked %+v, want the model's bill %+v", id, got, billed(3))
		}
	}
	loaded, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.AgentTokens(); got != billed(6) {
		t.Errorf("the saved run's agents used %+v, want %+v (the report claimed %+v per task)", got, billed(6), forged)
	}
}

// Without a gateway counting an attempt (a shared watcher's token), its
// report's figures are booked, as before.
func TestMeterKeepsTheReportWhereTheGatewayDoesNotCount(t *testing.T) {
	t.Parallel()
	agent, _ := newMeteredAgent(t, 1)
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		rep := completed(c)
		rep.Tokens = protocol.Tokens{Prompt: 70, Completion: 7}
		return rep
	})
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt, Meter: agent.gw}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := st.Info[taskID(0)].Tokens; got != (protocol.Tokens{Prompt: 70, Completion: 7}) {
		t.Errorf("booked %+v, want the report's figures", got)
	}
}

// The run's token budget is spent at the gateway in the middle of an
// attempt: the next request is refused (402, naming the budget and the
// flag), the task goes back to pending whatever its report claims, and the
// run pauses at the budget with the gateway's figures, resumable.
func TestMeterRunBudgetStopsAtTheGateway(t *testing.T) {
	t.Parallel()
	agent, srv := newMeteredAgent(t, 10)
	l := newLayout(t)
	rt := newFakeRuntime(l, agent.answer(t))
	st := newTestState(t, chain(2)...)
	st.Usage = llm.Usage{} // the planner's tokens would count too; none here
	budget := Budget{Tokens: 2500}
	if err := New(Options{Layout: l, Runtime: rt, Meter: agent.gw, Budget: budget}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	// Admitted at 0, 1050 and 2100 tokens; refused at 3150.
	if agent.served != 3 || len(srv.Requests()) != 3 {
		t.Errorf("the model served %d calls (%d requests), want 3", agent.served, len(srv.Requests()))
	}
	var le *llm.Error
	if !errors.As(agent.refusal, &le) || le.Status != http.StatusPaymentRequired || le.Retriable ||
		!strings.Contains(le.Message, "token budget reached") || !strings.Contains(le.Message, "--budget-tokens") {
		t.Errorf("the agent was answered %v, want a final 402 naming the token budget and --budget-tokens", agent.refusal)
	}
	if st.Status != runrecord.RunPaused || st.Stop == nil || st.Stop.Reason != runrecord.StopBudgetTok || st.Stop.Used != float64(billed(3).Prompt+billed(3).Completion) {
		t.Fatalf("run %s, stop %+v; want paused at the token budget with the gateway's 3150 tokens", st.Status, st.Stop)
	}
	for id, s := range status(st) {
		if s != taskgraph.Pending {
			t.Errorf("%s is %s, want pending for a resume with a larger budget", id, s)
		}
	}
	if got := st.Info[taskID(0)].Tokens; got != billed(3) {
		t.Errorf("booked %+v, want %+v", got, billed(3))
	}
}

// Past its task's budget an attempt is refused and the task fails as a
// task stopped at its budget (the decision step hears "budget"), though
// its report says it completed.
func TestMeterTaskBudgetStopsAtTheGateway(t *testing.T) {
	t.Parallel()
	agent, _ := newMeteredAgent(t, 10)
	l := newLayout(t)
	rt := newFakeRuntime(l, agent.answer(t))
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt, Meter: agent.gw, Budget: Budget{TaskTokens: 2000}}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if agent.served != 2 {
		t.Errorf("served %d calls, want 2 (1050 and 2100 tokens; the third is past 2000)", agent.served)
	}
	tk, _ := taskgraph.New(st.Tasks)
	got, _ := tk.Get(taskID(0))
	if got.Status != taskgraph.Failed || !strings.Contains(got.Error, "budget") || !strings.Contains(got.Error, "2000") {
		t.Errorf("task %s: %q, want failed at its budget", got.Status, got.Error)
	}
	if st.Info[taskID(0)].Tokens != billed(2) {
		t.Errorf("booked %+v, want %+v", st.Info[taskID(0)].Tokens, billed(2))
	}
}
