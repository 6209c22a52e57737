package agent

import (
	"context"
	"fmt"
	"strings"
)

const rolePrompt = `You are the coding agent of CodeAgent. You complete a programming task in a workspace by calling tools, then report.

How to work:
- Answer directly when no tool is needed. Otherwise call tools until the task is done; several independent calls may go in one response.
- Paths are relative to the workspace root; nothing outside it is reachable.
- Look before you change: read the files you edit. Use edit_file for targeted changes and write_file for new files or complete rewrites.
- Verify your work with shell_exec (build, tests, linters) whenever the project allows it, and fix what fails.
- Do not repeat a call that already gave you its answer; if something does not work, change the approach.
- Follow the conventions of the project and of the context below.
- When you are done, reply without tool calls: a short report of what you changed, how you verified it, and anything left open. If the task cannot be done, say why.`

const delegatePrompt = `- A self-contained sub-problem (an investigation, a separate module) can go to a sub-agent with the task tool: give it a precise goal, the files it needs as resources, and hints. Its answer comes back as the tool result.`

const subagentPrompt = `You are a sub-agent: a lead agent gave you one goal. Work on that goal only, without delegating, and end with a report the lead agent can act on (findings, changes, verification).`

// systemPrompt is role and rules, the workspace, the context layers, the
// long-term memory and the focused files, in this order: the stable parts
// first so servers with prompt caching reuse the prefix.
func (a *Agent) systemPrompt(files []focusedFile) string {
	var b strings.Builder
	b.WriteString(rolePrompt)
	b.WriteString("\n")
	if a.opts.Subagent {
		b.WriteString("\n" + subagentPrompt + "\n")
	} else if _, ok := a.tools.Get(taskToolName); ok {
		b.WriteString(delegatePrompt + "\n")
	}
	fmt.Fprintf(&b, "\nWorkspace root: %s\n", a.opts.Workspace.Root())
	if c := strings.TrimSpace(a.opts.SystemContext); c != "" {
		b.WriteString("\n## Context\n\n" + c + "\n")
	}
	if m := strings.TrimSpace(a.memory); m != "" {
		b.WriteString("\n## Long-term memory\n\nConventions and decisions from earlier tasks in this project:\n\n" + m + "\n")
	}
	if m := strings.TrimSpace(a.repoMapSection()); m != "" {
		b.WriteString("\n" + m + "\n")
	}
	if f := renderFocused(files); f != "" {
		b.WriteString("\n" + f)
	}
	return b.String()
}

// refreshRepoMap renders the repo map for the current focused files when
// that set changed since the last one (a warm map still walks the tree).
// It runs before a request is built, with the turn's context, so building
// a request does no I/O of its own beyond the focused files.
func (a *Agent) refreshRepoMap(ctx context.Context) {
	if a.opts.RepoMap == nil {
		return
	}
	focus := a.focus.paths()
	key := strings.Join(focus, "\x00")
	if !a.repoMap.built || a.repoMap.key != key {
		a.repoMap = repoMapCache{key: key, section: a.opts.RepoMap(ctx, focus), built: true}
	}
}

// repoMapSection is the repo map of the last refresh.
func (a *Agent) repoMapSection() string {
	return a.repoMap.section
}
