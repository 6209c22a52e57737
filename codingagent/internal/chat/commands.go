package chat

import (
	"context"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
)

const helpText = `Type a request and press Enter; the agent answers or works in the workspace.
@file:KEYWORD attaches matching workspace files to the request.

  /mode plan | direct     plan mode: read-only tools and create_plan (Ctrl-P toggles
                          it; without line editing, Ctrl-P then Enter)
  /plan show | to-todos | clear
  /todos list | execute ID [--mode default|auto_edit] | execute-all [--mode …]
         | update ID STATUS | export [FILE] | clear
  /compact                summarise the conversation now
  /context                tokens used, focused files, memory size
  /memory                 show the long-term memory
  /sessions               list saved chat sessions (resume with --resume ID)
  /help, /exit

Ctrl-C cancels the running answer; at an idle prompt, Ctrl-C twice or Ctrl-D leaves.`

// command runs a slash command; true means leave the chat.
func (c *Chat) command(ctx context.Context, line string) bool {
	fields := strings.Fields(line)
	name, args := fields[0], fields[1:]
	switch name {
	case "/exit", "/quit":
		return true
	case "/help":
		c.printf("%s\n", helpText)
	case "/mode":
		c.modeCommand(args)
	case "/plan":
		c.planCommand(args)
	case "/todos", "/todo":
		c.todosCommand(ctx, args)
	case "/compact":
		tctx, done := c.turnContext(ctx)
		defer done()
		if err := c.agent.Compact(tctx); err != nil {
			c.printf("nothing compacted: %v\n", err)
		}
	case "/context":
		c.contextCommand(ctx)
	case "/memory":
		c.memoryCommand()
	case "/sessions":
		c.sessionsCommand()
	default:
		c.printf("unknown command %s: /help lists the commands\n", name)
	}
	return false
}

func (c *Chat) modeCommand(args []string) {
	if len(args) != 1 {
		c.printf("usage: /mode plan | direct (now %s)\n", c.modeName())
		return
	}
	switch args[0] {
	case "plan":
		c.setPlanMode(true)
	case "direct":
		c.setPlanMode(false)
	default:
		c.printf("unknown mode %q: /mode plan or /mode direct\n", args[0])
	}
}

func (c *Chat) modeName() string {
	if c.planMode.Load() {
		return "plan"
	}
	return "direct"
}

func (c *Chat) planCommand(args []string) {
	sub := "show"
	if len(args) > 0 {
		sub = args[0]
	}
	if sub != "clear" && c.state.Plan == nil {
		c.printf("no plan yet: enter plan mode (/mode plan) and ask for one\n")
		return
	}
	switch sub {
	case "show":
		c.printf("%s", renderPlan(c.state.Plan))
	case "to-todos":
		todos := todosFromPlan(c.state.Plan)
		replaced := len(c.state.Todos)
		c.state.Todos = todos
		if c.saveState() != nil {
			return
		}
		if replaced > 0 {
			c.printf("replaced %d todos\n", replaced)
		}
		c.printf("%d todos created; /todos list shows them, /todos execute-all runs them\n", len(todos))
	case "clear":
		c.state.Plan = nil
		if c.saveState() == nil {
			c.printf("plan cleared\n")
		}
	default:
		c.printf("usage: /plan show | to-todos | clear\n")
	}
}

func (c *Chat) contextCommand(ctx context.Context) {
	ci := c.agent.ContextInfo(ctx)
	pct := 0
	if ci.Window > 0 {
		pct = ci.Tokens * 100 / ci.Window
	}
	c.printf("context: %d of %d tokens (%d%%); compaction at %d; %d messages\n", ci.Tokens, ci.Window, pct, ci.Compaction, ci.Messages)
	files := "(none)"
	if len(ci.FocusedFiles) > 0 {
		files = strings.Join(ci.FocusedFiles, ", ")
	}
	c.printf("focused files: %s\n", files)
	if ci.MemoryPath == "" {
		c.printf("memory: off\n")
	} else {
		c.printf("memory: %d chars (%s)\n", ci.MemoryChars, ci.MemoryPath)
	}
}

func (c *Chat) memoryCommand() {
	path := c.opts.Agent.MemoryPath
	if path == "" {
		c.printf("long-term memory is off in this chat\n")
		return
	}
	b, err := protocol.ReadRegular(path, 0)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		c.printf("no long-term memory yet (%s): it is distilled when a chat session ends\n", path)
		return
	}
	c.printf("%s (%s):\n%s\n", "long-term memory", path, strings.TrimSpace(string(b)))
}

func (c *Chat) sessionsCommand() {
	list, err := ListSessions(c.opts.SessionsDir)
	if err != nil {
		c.printf("error: %v\n", err)
		return
	}
	if len(list) == 0 {
		c.printf("no saved chat sessions in %s\n", c.opts.SessionsDir)
		return
	}
	for _, s := range list {
		mark := " "
		if s.ID == c.opts.SessionID {
			mark = "*"
		}
		c.printf("%s %s  %s  %3d messages  %s\n", mark, s.ID, s.Modified.Local().Format("2006-01-02 15:04"), s.Messages, s.FirstInput)
	}
	c.printf("resume one with: codingagent chat --resume ID (or --continue for the latest)\n")
}
