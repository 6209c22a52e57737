package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/codes"

	"github.com/codeagent/codeagent/internal/clip"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/internal/tools"
)

// RunTask works on t until the model answers without tool calls or a stop
// condition hits. When the session already holds this task's conversation
// (a restarted agent), it resumes it instead of adding the task again.
func (a *Agent) RunTask(ctx context.Context, t Task) (Result, error) {
	if t.ID == "" {
		return Result{}, errors.New("agent: task has no id")
	}
	return a.runTask(ctx, t, formatTask(t))
}

// runTask starts (or resumes) task t whose first message is first.
func (a *Agent) runTask(ctx context.Context, t Task, first string) (Result, error) {
	a.task = &t
	a.beginRun(t.ID)
	if a.hist.taskID == t.ID && len(a.hist.msgs) > a.hist.pinned && a.hist.pinned >= 0 {
		if answer, ok := a.hist.lastAnswer(); ok {
			// Finished before a crash that lost only the report: no new model call.
			return a.finish(Result{Status: Completed, Answer: answer}), nil
		}
		a.logEvent("resuming task %s from its session (%d messages)", t.ID, len(a.hist.msgs))
	} else if err := a.startTask(t.ID, userMessage(first)); err != nil {
		return a.finish(Result{Status: Failed, Error: err.Error()}), nil
	}
	res := a.loop(ctx)
	if res.Status == Completed && !a.opts.Subagent && a.opts.MemoryPath != "" {
		a.remember(ctx)
	}
	return a.finish(res), nil
}

// Send adds one user turn and runs the loop until the model answers.
func (a *Agent) Send(ctx context.Context, input string) (Result, error) {
	taskID := ""
	if a.task != nil {
		taskID = a.task.ID
	}
	a.beginRun(taskID)
	if err := a.appendMessage(userMessage(input)); err != nil {
		return a.finish(Result{Status: Failed, Error: err.Error()}), nil
	}
	return a.finish(a.loop(ctx)), nil
}

func (a *Agent) beginRun(taskID string) {
	a.run = &runState{changed: map[string]bool{}, taskID: taskID}
	a.memory = readMemory(a.opts.MemoryPath)
}

// startResponse emits response_start once the first model response says
// which mode this is (plan when it calls create_plan or the turn is in plan
// mode, direct otherwise), then the tokens held back until then. resp is nil when no
// response came.
func (a *Agent) startResponse(resp *llm.Response) {
	if a.run.started {
		return
	}
	a.run.started = true
	mode := "direct"
	if a.turn.PlanMode {
		mode = "plan"
	}
	if resp != nil {
		for _, c := range resp.Message.ToolCalls {
			if c.Name == CreatePlanToolName {
				mode = "plan"
			}
		}
	}
	a.emit(events.Event{Type: events.ResponseStart, Mode: mode, TaskID: a.run.taskID})
	for _, t := range a.run.tokens {
		a.emit(events.Event{Type: events.Token, Text: t})
	}
	a.run.tokens = nil
}

// finish fills in what every result carries and emits response_end.
func (a *Agent) finish(res Result) Result {
	a.startResponse(nil)
	res.Usage = a.run.usage
	res.Subagents = a.run.subagents
	res.Plan = a.run.plan
	res.FilesChanged = make([]string, 0, len(a.run.changed))
	for p := range a.run.changed {
		res.FilesChanged = append(res.FilesChanged, p)
	}
	sort.Strings(res.FilesChanged)
	text := res.Error
	if res.Status == Completed {
		text = res.Answer
	}
	a.emit(events.Event{Type: events.ResponseEnd, Status: string(res.Status), Text: text,
		Usage: &events.Usage{Prompt: res.Usage.Prompt, Completion: res.Usage.Completion, Cached: res.Usage.Cached,
			CacheWrite: res.Usage.CacheWrite, CostUSD: res.Usage.CostUSD}})
	return res
}

// loop is the tool-calling loop: call the model; no tool calls → done;
// otherwise run every call in order, answer each, and go round again.
func (a *Agent) loop(ctx context.Context) Result {
	var det loopDetector
	for iter := 0; ; {
		if ctx.Err() != nil {
			return Result{Status: Interrupted, Error: "interrupted", Iterations: iter}
		}
		if used := a.run.usage.Prompt + a.run.usage.Completion; a.opts.BudgetTokens > 0 && used > a.opts.BudgetTokens {
			return Result{Status: Failed, Reason: ReasonBudget, Iterations: iter, Error: fmt.Sprintf(
				"budget: stopped after %d tokens, past the task's budget of %d tokens (task_budget_tokens); the conversation is saved", used, a.opts.BudgetTokens)}
		}
		if iter >= a.opts.MaxIterations {
			return Result{Status: Failed, Iterations: iter, Error: fmt.Sprintf(
				"stopped after %d model calls without finishing (the iteration limit); the conversation is saved and the task can be resumed or split", iter)}
		}
		req := a.prepare(ctx)
		resp, err := a.call(ctx, req)
		iter++
		if err != nil {
			if ctx.Err() != nil {
				return Result{Status: Interrupted, Error: "interrupted", Iterations: iter}
			}
			res := Result{Status: Failed, Error: err.Error(), Err: err, Iterations: iter}
			var le *llm.Error
			if errors.As(err, &le) {
				res.Reason = ReasonModel
			}
			return res
		}
		a.startResponse(resp)
		msg := assistantMessage(resp.Message)
		if err := a.appendMessage(msg); err != nil {
			return Result{Status: Failed, Error: err.Error(), Iterations: iter}
		}
		if len(msg.ToolCalls) == 0 {
			if terr := llm.TextToolCall(resp.Message.Content, req.Tools); terr != nil {
				// Not an answer: the server left the model's tool call in
				// the text. Every later turn would do the same.
				return Result{Status: Failed, Reason: ReasonConfig, Error: terr.Error(), Err: terr, Iterations: iter}
			}
			return Result{Status: Completed, Answer: msg.Content, Iterations: iter}
		}
		if status, reason := a.runTools(ctx, msg.ToolCalls, &det); status != "" {
			return Result{Status: status, Error: reason, Iterations: iter}
		}
		if p := a.run.pending; p != nil && !a.run.executing {
			a.run.pending = nil
			res := a.executePlan(ctx, p)
			res.Iterations += iter
			return res
		}
	}
}

// call sends req; a context-length error compacts the history and retries once.
func (a *Agent) call(ctx context.Context, req llm.Request) (*llm.Response, error) {
	resp, err := a.chat(ctx, req)
	if err != nil && llm.IsContextLength(err) && ctx.Err() == nil {
		a.logEvent("the model's context window was exceeded; compacting and retrying once")
		if cerr := a.compact(ctx, true); cerr != nil {
			return nil, fmt.Errorf("%w (compacting the history to recover failed: %v)", err, cerr) //nolint:errorlint // callers match the model's error, not the compaction's
		}
		req = a.buildRequest()
		resp, err = a.chat(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	a.monitor.observe(req, resp.Usage)
	return resp, nil
}

// chat is one model call whose usage counts toward the run.
func (a *Agent) chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	var onToken func(string)
	if req.Stream {
		onToken = func(s string) {
			if !a.run.started {
				a.run.tokens = append(a.run.tokens, s)
				return
			}
			a.emit(events.Event{Type: events.Token, Text: s})
		}
	}
	resp, err := a.opts.Client.Chat(ctx, req, onToken)
	if err != nil {
		return nil, err
	}
	a.run.usage.Add(resp.Usage)
	return resp, nil
}

// runTools executes every call of one response in order and answers each,
// so the history stays one the API accepts whatever happens. A non-empty
// status means the run must stop.
func (a *Agent) runTools(ctx context.Context, calls []llm.ToolCall, det *loopDetector) (Status, string) {
	for i, c := range calls {
		if ctx.Err() != nil {
			return Interrupted, a.answerRest(calls[i:], "cancelled: the run was interrupted before this call ran", "interrupted")
		}
		a.emit(events.Event{Type: events.ToolCall, Tool: c.Name, CallID: c.ID, Args: c.Arguments})
		if c.Oversize > 0 {
			// The client kept none of them: nothing to run, and the model
			// must hear why to do it differently.
			if err := a.answerOne(c, errorPrefix+oversizeText(c.Oversize), true); err != nil {
				return Failed, err.Error()
			}
			if reason, loop := det.add(c.Name, oversizeText(c.Oversize)); loop {
				return Failed, a.answerRest(calls[i+1:], "not run: the run was stopped ("+reason+")", reason)
			}
			continue
		}
		if ok, reason := a.gate(ctx, c); !ok {
			if err := a.answerOne(c, errorPrefix+reason, true); err != nil {
				return Failed, err.Error()
			}
			if ctx.Err() != nil {
				return Interrupted, a.answerRest(calls[i+1:], "cancelled: the run was interrupted before this call ran", "interrupted")
			}
			if r := a.answerRest(calls[i+1:], "not run: an earlier call of this response was refused", ""); r != "" {
				return Failed, r
			}
			return "", ""
		}
		res, err := a.callTool(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				content := "cancelled: the run was interrupted while this call ran"
				if strings.TrimSpace(res.Content) != "" {
					content = res.Content + "\n(" + content + ")"
				}
				if err := a.answerOne(c, errorPrefix+content, true); err != nil {
					return Interrupted, "interrupted; " + err.Error()
				}
				return Interrupted, a.answerRest(calls[i+1:], "cancelled: the run was interrupted before this call ran", "interrupted")
			}
			reason := fmt.Sprintf("tool %s failed: %v", c.Name, err)
			if err := a.answerOne(c, errorPrefix+reason, true); err != nil {
				return Failed, reason + "; " + err.Error()
			}
			return Failed, a.answerRest(calls[i+1:], "not run: an earlier tool call of this response failed", reason)
		}
		content := res.Content
		if res.IsError {
			content = errorPrefix + content
		}
		if err := a.answerOne(c, content, res.IsError); err != nil {
			return Failed, err.Error()
		}
		if err := a.noteFiles(c.Name, res.Files); err != nil {
			return Failed, err.Error()
		}
		if reason, loop := det.add(c.Name, c.Arguments); loop {
			return Failed, a.answerRest(calls[i+1:], "not run: the run was stopped ("+reason+")", reason)
		}
	}
	return "", ""
}

// callTool runs one tool call inside its execute_tool span.
func (a *Agent) callTool(ctx context.Context, c llm.ToolCall) (tools.Result, error) {
	ctx, span := telemetry.Start(ctx, "execute_tool "+c.Name, telemetry.OperationName.String("execute_tool"),
		telemetry.ToolName.String(c.Name), telemetry.ToolCallID.String(c.ID))
	defer span.End()
	res, err := tools.Call(tools.WithFocus(ctx, a.focus.paths()), a.offered(), c.Name, c.Arguments)
	if err != nil || res.IsError {
		span.SetStatus(codes.Error, "")
	}
	return res, err
}

// answerOne persists the tool message answering c and emits tool_result.
func (a *Agent) answerOne(c llm.ToolCall, content string, isErr bool) error {
	a.emit(events.Event{Type: events.ToolResult, Tool: c.Name, CallID: c.ID,
		Text: events.Shorten(content, 2000), IsError: isErr})
	return a.appendMessage(toolMessage(c.ID, content))
}

// answerRest answers calls that will not run and returns reason (or the
// persistence error that makes it moot).
func (a *Agent) answerRest(calls []llm.ToolCall, content, reason string) string {
	for _, c := range calls {
		if err := a.answerOne(c, content, true); err != nil {
			return reason + "; " + err.Error()
		}
	}
	return reason
}

// noteFiles records changed files for the result and file-tool files for
// the focused files.
func (a *Agent) noteFiles(tool string, files []tools.FileRef) error {
	for _, f := range files {
		if f.Changed {
			a.run.changed[f.Path] = true
		}
		if fileTools[tool] {
			if err := a.touchFocus(f.Path, f.Changed); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxContent bounds the text of one model answer the agent keeps (in the
// history, the session file and the report): a model that writes 2 MB of
// answer would otherwise be sent it back on every later turn and make a
// report over the protocol's 1 MiB cap.
const maxContent = 256 << 10

func oversizeText(n int) string {
	return fmt.Sprintf("the arguments of this call were %d bytes, over the limit of %d bytes; the call was not run. "+
		"Send large content in parts: several calls of at most a few hundred KB each (e.g. write the file, then append with edits).",
		n, llm.MaxToolArguments)
}

// assistantMessage makes the model's answer safe to store and send back:
// a role, content or tool calls, arguments that are at least "{}", and
// content of at most maxContent bytes.
func assistantMessage(m llm.Message) llm.Message {
	m.Role = llm.RoleAssistant
	m.Content = clip.String(m.Content, maxContent)
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
		for i := range m.ToolCalls {
			if m.ToolCalls[i].Arguments == "" {
				m.ToolCalls[i].Arguments = "{}"
			}
		}
	} else if m.Content == "" {
		m.Content = "(no answer)"
	}
	return m
}

func userMessage(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: s}
}
