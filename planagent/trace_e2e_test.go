//go:build e2e

package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the collector
// protocol's ExportTraceServiceRequest protobufs posted to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []recvSpan
}

type recvSpan struct {
	service string
	span    *tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want protobuf on /v1/traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := attr(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.spans = append(o.spans, recvSpan{service: service, span: s})
			}
		}
	}
	o.mu.Unlock()
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (o *otlpReceiver) snapshot() []recvSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]recvSpan(nil), o.spans...)
}

func hasFinishReason(kvs []*commonpb.KeyValue) bool {
	for _, kv := range kvs {
		if kv.Key == "gen_ai.response.finish_reasons" && len(kv.GetValue().GetArrayValue().GetValues()) > 0 {
			return true
		}
	}
	return false
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			v := kv.GetValue()
			if s := v.GetStringValue(); s != "" {
				return s
			}
			if i := v.GetIntValue(); i != 0 {
				return strconv.FormatInt(i, 10)
			}
			if v.GetBoolValue() {
				return "true"
			}
		}
	}
	return ""
}

// One run is one trace across both programs: the run and each attempt as
// invoke_agent, every LLM call as chat with its tokens and model, every
// tool call as execute_tool; the task's spans carry its id.
func TestE2ETraceAcrossBothPrograms(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	out, stderr, code := e.run("run", "--yes", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	assertOneRunTrace(t, recv, e, traceShape{processes: 1, planned: true})
}

// A run paused at its budget (exit 3) and resumed is still one trace: the
// resumed process's run span is a child of the first one, whose
// traceparent the run's state kept, and the attempts of both processes
// and the coding agent's spans under them share its trace id.
func TestE2ETraceAcrossResume(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	f := &fakeModel{tasks: threeTasks()}
	e := newRunEnv(t, f)
	fixedUsage(e, f)
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	planFile := chainPlanFile(t, e.dir, "")
	// As in TestE2EBudgetTokensPauseThenResume: alpha and beta, then the pause.
	if out, stderr, code := e.run("run", "--yes", "--plan", planFile, "--budget-tokens", "5000"); code != 3 {
		t.Fatalf("exit %d, want 3 (paused)\n%s%s", code, out, stderr)
	}
	if out, stderr, code := e.run("resume", "--budget-tokens", "100000"); code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if f.startCount("TOKEN-GAMMA") != 1 {
		t.Fatalf("gamma started %d times, want once (in the resume)", f.startCount("TOKEN-GAMMA"))
	}
	assertOneRunTrace(t, recv, e, traceShape{processes: 2})
}

// The same across a container: the agent in its attempt's container gets
// the OTEL_* variables, its loopback endpoint rewritten to the host, and
// its spans reach the receiver on this host in the run's trace.
func TestE2EDockerTraceAcrossBothPrograms(t *testing.T) {
	dockerE2E(t)
	recv := &otlpReceiver{}
	ln, err := net.Listen("tcp", "0.0.0.0:0") // where a container reaches it
	if err != nil {
		t.Fatal(err)
	}
	collector := &httptest.Server{Listener: ln, Config: &http.Server{Handler: recv}}
	collector.Start()
	defer collector.Close()
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newDockerRunEnv(t, f)
	port := ln.Addr().(*net.TCPAddr).Port
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:"+strconv.Itoa(port))
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	assertOneRunTrace(t, recv, e, traceShape{processes: 1, planned: true})
}

// traceShape is what a three-task run's trace holds besides its tasks.
type traceShape struct {
	processes int  // planagent processes that drove the run (run, resumes): a run span each
	planned   bool // the planner ran: planagent has a chat span
}

// assertOneRunTrace checks the spans of a three-task run: one trace, the
// run (in each process) and each attempt as invoke_agent, every LLM call
// as chat with its tokens and model, every tool call as execute_tool, the
// task id on each task span, the agent's spans under their attempt's and
// the run spans of resumed processes under the first one.
func assertOneRunTrace(t *testing.T, recv *otlpReceiver, e *runEnv, shape traceShape) {
	t.Helper()
	want := func(spans []recvSpan) bool {
		var toolsSeen, agentChats int
		for _, s := range spans {
			if s.service == "codingagent" && strings.HasPrefix(s.span.Name, "execute_tool") {
				toolsSeen++
			}
			if s.service == "codingagent" && strings.HasPrefix(s.span.Name, "chat") {
				agentChats++
			}
		}
		return toolsSeen >= 4 && agentChats >= 3
	}
	poll.Wait(t.Context(), 30*time.Second, func() bool { return want(recv.snapshot()) })
	spans := recv.snapshot()
	if !want(spans) {
		t.Fatalf("the receiver got %d spans, not the coding agent's chat and tool spans", len(spans))
	}

	traces := map[string]bool{}
	count := map[string]int{}
	for _, s := range spans {
		traces[string(s.span.TraceId)] = true
		a := s.span.Attributes
		op := attr(a, "gen_ai.operation.name")
		count[s.service+" "+op]++
		task := attr(a, "codeagent.task.id")
		switch {
		case s.span.Name == "invoke_agent planagent":
			if s.service != "planagent" || attr(a, "codeagent.run.id") == "" {
				t.Errorf("run span %v", a)
			}
		case s.span.Name == "invoke_agent codingagent":
			if task == "" || attr(a, "codeagent.attempt") == "" {
				t.Errorf("attempt span without its task: %v", a)
			}
		case strings.HasPrefix(s.span.Name, "chat "):
			if op != "chat" || attr(a, "gen_ai.request.model") != "test-model" || attr(a, "gen_ai.usage.input_tokens") == "" || attr(a, "gen_ai.usage.output_tokens") == "" {
				t.Errorf("chat span %s: %v", s.span.Name, a)
			}
			if s.span.Kind != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("chat span of kind %v, want client", s.span.Kind)
			}
			if !hasFinishReason(a) {
				t.Errorf("chat span without gen_ai.response.finish_reasons: %v", a)
			}
			if s.service == "codingagent" && task == "" {
				t.Errorf("the agent's chat span has no task id: %v", a)
			}
		case strings.HasPrefix(s.span.Name, "execute_tool "):
			if op != "execute_tool" || attr(a, "gen_ai.tool.name") == "" || task == "" {
				t.Errorf("tool span %s: %v", s.span.Name, a)
			}
		default: // e.g. the Docker client's own HTTP spans
			t.Errorf("span %s of %s is none of the run's", s.span.Name, s.service)
		}
		for _, kv := range a {
			if strings.Contains(kv.GetValue().GetStringValue(), e.key) {
				t.Errorf("the API key is in span %s", s.span.Name)
			}
		}
	}
	// The agent's outermost spans hang under planagent's span of the same
	// task's attempt: the traceparent crossed the command file.
	byID := map[string]recvSpan{}
	for _, s := range spans {
		byID[string(s.span.SpanId)] = s
	}
	for _, s := range spans {
		if s.service != "codingagent" {
			continue
		}
		p, ok := byID[string(s.span.ParentSpanId)]
		if !ok {
			t.Errorf("the agent's span %s has no parent in the trace", s.span.Name)
			continue
		}
		if p.service == "codingagent" {
			continue
		}
		if p.span.Name != "invoke_agent codingagent" || attr(p.span.Attributes, "codeagent.task.id") != attr(s.span.Attributes, "codeagent.task.id") {
			t.Errorf("the agent's span %s is under %s %s, not its task's attempt", s.span.Name, p.service, p.span.Name)
		}
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want the run as one", len(traces))
		for _, s := range spans {
			t.Logf("trace %x parent %x: %s %s %v", s.span.TraceId, s.span.ParentSpanId, s.service, s.span.Name, s.span.Attributes)
		}
	}
	// One root: the first process's run span; a resume's is its child.
	var roots, resumed []recvSpan
	for _, s := range spans {
		if s.span.Name != "invoke_agent planagent" {
			continue
		}
		if len(s.span.ParentSpanId) == 0 {
			roots = append(roots, s)
		} else {
			resumed = append(resumed, s)
		}
	}
	if len(roots) != 1 || len(resumed) != shape.processes-1 {
		t.Fatalf("run spans: %d roots and %d children, want 1 root and %d resumed", len(roots), len(resumed), shape.processes-1)
	}
	for _, s := range resumed {
		if string(s.span.ParentSpanId) != string(roots[0].span.SpanId) || attr(s.span.Attributes, "codeagent.resumed") == "" {
			t.Errorf("resumed run span: parent %x (want the run's %x), attributes %v", s.span.ParentSpanId, roots[0].span.SpanId, s.span.Attributes)
		}
	}
	// Each process's run span and three attempts.
	if want := shape.processes + 3; count["planagent invoke_agent"] != want {
		t.Errorf("planagent's invoke_agent spans: %d, want %d (%v)", count["planagent invoke_agent"], want, count)
	}
	if (shape.planned && count["planagent chat"] < 1) || count["codingagent chat"] < 3 || count["codingagent execute_tool"] < 4 {
		t.Errorf("span counts %v", count)
	}
}

// Ctrl-C still delivers the trace: both programs flush at exit, the run's
// span and the interrupted attempt's (an error) from planagent, the cut
// chat call from the agent.
func TestE2ETraceFlushedOnCtrlC(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("long end-to-end test (the watcher's 10 s grace): set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	plan := `{"title":"Slow","overview":"x","tasks":[{"id":"slow","description":"TOKEN-SLOW","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 4), tasks: []scriptTask{{token: "TOKEN-SLOW", delay: time.Minute,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}}}
	e := newRunEnv(t, f)
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	cmd := e.command("run", "--yes", "--runtime", "local", "be slow")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.started:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the task never started")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130", err)
	}
	// planagent has exited: what it flushed is here; the agent may end a
	// moment later.
	var run, attempt, agentChat bool
	poll.Wait(t.Context(), 30*time.Second, func() bool {
		for _, s := range recv.snapshot() {
			switch {
			case s.span.Name == "invoke_agent planagent":
				run = true
			case s.span.Name == "invoke_agent codingagent":
				attempt = s.span.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR &&
					attr(s.span.Attributes, "codeagent.task.id") == "slow"
			case s.service == "codingagent" && strings.HasPrefix(s.span.Name, "chat "):
				agentChat = true
			}
		}
		return run && attempt && agentChat
	})
	if !run || !attempt || !agentChat {
		t.Fatalf("after Ctrl-C: run span %v, interrupted attempt span %v, the agent's chat span %v", run, attempt, agentChat)
	}
}
