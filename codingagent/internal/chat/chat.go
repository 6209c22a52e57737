// Package chat is codingagent's interactive session: a
// line-based REPL over the agent with direct mode, plan mode, a plan turned
// into todos, tool approval, and the conversation, plan and todos persisted
// under the sessions directory so a later chat continues them.
//
// On a terminal (Options.Terminal) lines are read with editing, a history
// kept per workspace (Up/Down, Ctrl-R search) and Ctrl-P toggling plan mode
// at once (lineedit.go); the terminal is raw only while a line is read.
// Otherwise lines are read with bufio and a line starting with the byte
// 0x10 toggles plan mode. Ctrl-C cancels the running turn (SIGINT, on
// Options.Interrupt); at the prompt, twice leaves. Ctrl-D is the end of input.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/codingagent/internal/filerefs"
	"github.com/codeagent/codeagent/internal/events"
)

// ctrlP is the byte a raw terminal sends for Ctrl-P.
const ctrlP = "\x10"

// ctrlCLine is what the line editor delivers for Ctrl-C (raw mode turns it
// into a byte, not SIGINT).
const ctrlCLine = "\x03"

// Options configures a chat session.
type Options struct {
	// Agent is the agent's configuration; the chat sets SessionPath, Events,
	// Approve and Planning itself.
	Agent       agent.Options
	SessionsDir string
	SessionID   string // from ResolveSession: a new or an existing session
	In          io.Reader
	Out         io.Writer
	// Interactive is true when stdin is a terminal: approvals are asked.
	Interactive bool
	// Terminal, when set, is the terminal In is: lines are read from it
	// with editing and history (HistoryFile, "" keeps none).
	Terminal    *os.File
	HistoryFile string
	// Approval is the --approval value; "" means not given (default mode,
	// and without a terminal calls that need approval are refused).
	Approval ApprovalMode
	// Interrupt delivers Ctrl-C: it cancels the running turn; two in a row
	// at an idle prompt end the chat.
	Interrupt <-chan os.Signal
	Events    events.Sink // receives every agent event too (tests, logs)
}

// Chat is one running session.
type Chat struct {
	opts     Options
	out      io.Writer
	agent    *agent.Agent
	approver *approver
	lines    <-chan string
	state    State
	planMode atomic.Bool // toggled by Ctrl-P from the line editor too

	editor     *editor
	requests   chan string // prompts for the line editor
	waiting    bool        // a line was asked for and has not arrived
	cancelTurn func()      // cancels the running turn (Ctrl-C in the line editor)
	turns      int         // inputs answered in this process, for memory at the end
	streamed   atomic.Bool // tokens were printed during the current turn
	interrupt  <-chan os.Signal
}

// Run runs the session until /exit, end of input, a second Ctrl-C at an
// idle prompt, or ctx's end (SIGTERM).
func Run(ctx context.Context, opts Options) error {
	c, err := open(opts)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	if c.opts.Terminal != nil {
		c.editor = newEditor(c.opts.Terminal, c.out, c.opts.HistoryFile, c.togglePlan)
		defer c.editor.restore()
		c.requests = make(chan string, 1)
		c.lines = c.editLines(done)
	} else {
		c.lines = readLines(c.opts.In, done)
	}
	err = c.loop(ctx)
	if cerr := c.agent.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the chat session log: %w", cerr)
	}
	c.discardIfEmpty()
	return err
}

// discardIfEmpty removes the files of a session in which nothing was said
// and nothing planned (a look at /help), so that --continue and /sessions
// find the last real conversation rather than an empty one.
func (c *Chat) discardIfEmpty() {
	if len(c.agent.Messages()) > 0 || c.state.Plan != nil || len(c.state.Todos) > 0 {
		return
	}
	for _, p := range []string{SessionPath(c.opts.SessionsDir, c.opts.SessionID), statePath(c.opts.SessionsDir, c.opts.SessionID)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.printf("warning: remove the empty session file: %v\n", err)
		}
	}
}

func open(opts Options) (*Chat, error) {
	if opts.SessionsDir == "" || opts.SessionID == "" {
		return nil, errors.New("chat: no sessions directory or session id given")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.In == nil {
		opts.In = strings.NewReader("")
	}
	c := &Chat{opts: opts, out: opts.Out, interrupt: opts.Interrupt}
	if c.interrupt == nil {
		c.interrupt = make(chan os.Signal)
	}
	mode := opts.Approval
	if mode == "" {
		mode = ApproveDefault
	}
	c.approver = &approver{mode: mode, always: map[string]bool{}, out: c.out, ask: c.readLine,
		canAsk: opts.Interactive || opts.Approval == ApproveDefault}
	st, err := loadState(statePath(opts.SessionsDir, opts.SessionID))
	if err != nil {
		return nil, err
	}
	c.state = st
	c.planMode.Store(st.PlanMode) // --continue keeps plan mode
	ao := opts.Agent
	ao.SessionPath = SessionPath(opts.SessionsDir, opts.SessionID)
	ao.Planning = true
	ao.Approve = c.approver.approve
	ao.Events = events.Multi{events.NewText(c.out), opts.Events, events.Func(func(e events.Event) {
		if e.Type == events.Token && e.Text != "" {
			c.streamed.Store(true)
		}
	})}
	a, err := agent.New(ao)
	if err != nil {
		return nil, fmt.Errorf("start the chat agent: %w", err)
	}
	c.agent = a
	return c, nil
}

func (c *Chat) loop(ctx context.Context) error {
	resumed := ""
	if n := len(c.agent.Messages()); n > 0 {
		resumed = fmt.Sprintf(", %d messages restored", n)
	}
	c.printf("codingagent chat — session %s%s. /help lists commands; Ctrl-D or /exit leaves.\n", c.opts.SessionID, resumed)
	idleInterrupts := 0
	if c.planMode.Load() {
		c.printf("plan mode (kept from the session): /mode direct or Ctrl-P leaves it\n")
	}
	for {
		c.ask(c.prompt())
		select {
		case <-ctx.Done():
			c.printf("\n")
			return c.end(ctx)
		case <-c.interrupt:
			idleInterrupts++
			if idleInterrupts >= 2 {
				c.printf("\n")
				return c.end(ctx)
			}
			c.printf("\n(Ctrl-C again, Ctrl-D or /exit leaves the chat)\n")
		case line, ok := <-c.lines:
			c.waiting = false
			if !ok {
				c.printf("\n")
				return c.end(ctx)
			}
			c.syncPlanMode()
			if line == ctrlCLine {
				idleInterrupts++
				if idleInterrupts >= 2 {
					return c.end(ctx)
				}
				c.printf("(Ctrl-C again, Ctrl-D or /exit leaves the chat)\n")
				continue
			}
			idleInterrupts = 0
			if quit := c.handle(ctx, line); quit {
				return c.end(ctx)
			}
		}
	}
}

func (c *Chat) prompt() string {
	if c.planMode.Load() {
		return "[PLAN] > "
	}
	return "> "
}

// handle runs one input line; true means leave the chat.
func (c *Chat) handle(ctx context.Context, line string) bool {
	if rest, ok := strings.CutPrefix(line, ctrlP); ok {
		c.setPlanMode(!c.planMode.Load())
		line = rest
	}
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return false
	case strings.HasPrefix(line, "/"):
		return c.command(ctx, line)
	}
	c.send(ctx, line)
	return false
}

func (c *Chat) setPlanMode(on bool) {
	c.planMode.Store(on)
	c.printf("%s\n", planModeNote(on))
	c.syncPlanMode()
}

func planModeNote(on bool) string {
	if on {
		return "plan mode: read-only tools and create_plan; /mode direct (or Ctrl-P) leaves it"
	}
	return "direct mode"
}

// togglePlan is Ctrl-P in the line editor (its goroutine, while the chat
// waits for the line); the state file follows with the line (syncPlanMode).
func (c *Chat) togglePlan() (string, string) {
	on := !c.planMode.Load()
	c.planMode.Store(on)
	return c.prompt(), planModeNote(on)
}

// syncPlanMode saves plan mode with the session's state when it changed,
// so that --continue comes back in the same mode.
func (c *Chat) syncPlanMode() {
	if on := c.planMode.Load(); on != c.state.PlanMode {
		c.state.PlanMode = on
		_ = c.saveState()
	}
}

// ask shows prompt and asks for the next line: printed before a plain
// read, or handed to the line editor (once: a line asked for and not yet
// read is not asked for again).
func (c *Chat) ask(prompt string) {
	if c.editor == nil {
		c.printf("%s", prompt)
		return
	}
	if c.waiting {
		return
	}
	c.waiting = true
	c.requests <- prompt
}

// editLines reads a line from the editor for each prompt asked for.
func (c *Chat) editLines(done <-chan struct{}) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		for {
			var prompt string
			select {
			case prompt = <-c.requests:
			case <-done:
				return
			}
			line, err := c.editor.readLine(prompt)
			switch {
			case errors.Is(err, errInterrupted):
				line = ctrlCLine
			case err != nil:
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(c.out, "error: %v\n", err)
				}
				return
			}
			select {
			case ch <- line:
			case <-done:
				return
			}
		}
	}()
	return ch
}

// send runs one input through the agent.
func (c *Chat) send(ctx context.Context, input string) {
	tctx, done := c.turnContext(ctx)
	defer done()
	expanded, err := filerefs.ExpandContext(tctx, c.opts.Agent.Workspace, input)
	if err != nil {
		c.printf("error: expand @file references: %v\n", err)
		return
	}
	for _, w := range expanded.Warnings {
		c.printf("warning: %s\n", w)
	}
	res := c.runTurn(tctx, expanded.Text, agent.Turn{PlanMode: c.planMode.Load()})
	if res.Plan != nil {
		c.state.Plan = res.Plan
		if err := c.saveState(); err == nil {
			c.printf("plan saved (%d steps): /plan show, /plan to-todos, /todos execute-all\n", len(res.Plan.Tasks))
		}
	}
}

// runTurn sends text, prints the outcome and counts the turn.
func (c *Chat) runTurn(ctx context.Context, text string, turn agent.Turn) agent.Result {
	c.streamed.Store(false)
	res, err := c.agent.SendTurn(ctx, text, turn)
	c.turns++
	if err != nil {
		c.printf("error: %v\n", err)
		return agent.Result{Status: agent.Failed, Error: err.Error()}
	}
	switch res.Status {
	case agent.Completed:
		if !c.streamed.Load() {
			c.printf("%s\n", strings.TrimSpace(res.Answer))
		}
	case agent.Interrupted:
		c.printf("(interrupted: the conversation is consistent; go on or /exit)\n")
	default:
		c.printf("error: %s\n", res.Error)
	}
	return res
}

// turnContext is ctx, also cancelled by the next Ctrl-C.
func (c *Chat) turnContext(ctx context.Context) (context.Context, func()) {
	tctx, cancel := context.WithCancel(ctx)
	c.cancelTurn = cancel
	stop := make(chan struct{})
	go func() {
		select {
		case <-c.interrupt:
			cancel()
		case <-stop:
		}
	}()
	return tctx, func() { close(stop); cancel(); c.cancelTurn = nil }
}

// readLine is the next input line, for approval questions.
func (c *Chat) readLine(ctx context.Context) (string, bool) {
	c.ask("")
	select {
	case l, ok := <-c.lines:
		c.waiting = false
		if l == ctrlCLine {
			// Ctrl-C at a question in the line editor: as SIGINT would.
			if c.cancelTurn != nil {
				c.cancelTurn()
			}
			return "", false
		}
		return l, ok
	case <-ctx.Done():
		return "", false
	}
}

// end distils long-term memory from a session that did something.
func (c *Chat) end(ctx context.Context) error {
	if c.turns == 0 || c.opts.Agent.MemoryPath == "" || ctx.Err() != nil {
		return nil
	}
	c.printf("updating long-term memory…\n")
	if err := c.agent.Remember(ctx); err != nil {
		c.printf("warning: %v\n", err)
	}
	return nil
}

func (c *Chat) saveState() error {
	if err := c.state.save(statePath(c.opts.SessionsDir, c.opts.SessionID)); err != nil {
		c.printf("error: %v\n", err)
		return err
	}
	return nil
}

func (c *Chat) printf(format string, args ...any) { fmt.Fprintf(c.out, format, args...) }

// readLines delivers r's lines (without the newline) until its end or
// done. A read blocked on a terminal outlives the chat; the process ends it.
func readLines(r io.Reader, done <-chan struct{}) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				select {
				case ch <- strings.TrimRight(line, "\r\n"):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
