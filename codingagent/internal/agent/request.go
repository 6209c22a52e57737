package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/llm"
)

const (
	errorPrefix = "ERROR: "
	shellKeep   = 2000 // chars of an older shell_exec result sent again
	readKeep    = 2000 // chars of an older read of a file not in focus
	// Results more than oldMessages messages back are cut harder: by then
	// the work has moved on, and their gist (the head, the outcome at the
	// tail) is what later turns refer to.
	oldMessages   = 20
	oldShellKeep  = 600
	oldReadKeep   = 800
	maskMinChars  = 1000 // tool results shorter than this are not worth masking
	argsKeepChars = 500  // chars of an older edit_file old/new string
)

// fileTools are the tools whose results the focused files make redundant.
var fileTools = map[string]bool{"read_file": true, "write_file": true, "edit_file": true}

// viewOpts selects the request-shaping steps; tests and the benchmark turn
// them off to compare.
type viewOpts struct {
	dedup      bool // abbreviate older file-tool results, cut older shell output
	maskBefore int  // tool results before this index are masked when bulky
}

// shape is the request shaped now: the system prompt (with the focused
// files read from disk now) and the shaped history. buildRequest decides
// when it replaces the frozen prefix.
func (a *Agent) shape() llm.Request {
	return a.buildRequestWith(viewOpts{dedup: true, maskBefore: a.monitor.maskBefore})
}

func (a *Agent) buildRequestWith(o viewOpts) llm.Request {
	var files []focusedFile
	if o.dedup {
		files = a.notShownLatest(a.focus.render(a.opts.Workspace))
	}
	msgs := make([]llm.Message, 0, len(a.hist.msgs)+1)
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: a.systemPrompt(files)})
	msgs = append(msgs, a.view(files, o)...)
	if o.dedup && len(files) > 0 {
		// Early in a session the focused files' section can cost more than
		// the few reads it replaces; then the plain history (still masked
		// as asked) is the smaller request and says the same.
		plain := viewOpts{maskBefore: o.maskBefore}
		alt := make([]llm.Message, 0, len(a.hist.msgs)+1)
		alt = append(alt, llm.Message{Role: llm.RoleSystem, Content: a.systemPrompt(nil)})
		alt = append(alt, a.view(nil, plain)...)
		if llm.EstimateTokens(alt) < llm.EstimateTokens(msgs) {
			msgs = alt
		}
	}
	return llm.Request{Model: a.opts.Model, Messages: msgs, Tools: a.offered().Definitions(), Stream: a.opts.Stream}
}

// callInfo is what the view needs to know about a tool call.
type callInfo struct {
	name string
	args string
}

// latestRound is the index of the last assistant message: the messages
// after it are the latest round's results, which go in full.
func (a *Agent) latestRound() int {
	for i := len(a.hist.msgs) - 1; i >= 0; i-- {
		if a.hist.msgs[i].Role == llm.RoleAssistant {
			return i
		}
	}
	return -1
}

// notShownLatest drops from files those whose whole current content a
// read_file result of the latest round shows: the model sees it there in
// full, and a second copy in the system prompt would make the request
// larger than the plain history. From the next request on, that read is
// older and the file comes back into the focused files.
func (a *Agent) notShownLatest(files []focusedFile) []focusedFile {
	last := a.latestRound()
	if last < 0 || len(files) == 0 {
		return files
	}
	shown := map[string]string{}
	for _, c := range a.hist.msgs[last].ToolCalls {
		if c.Name == "read_file" {
			shown[c.ID] = a.argPath(c.Arguments)
		}
	}
	if len(shown) == 0 {
		return files
	}
	seen := map[string]string{} // path → the latest round's read of it
	for _, m := range a.hist.msgs[last+1:] {
		if p, ok := shown[m.ToolCallID]; ok && m.Role == llm.RoleTool {
			seen[p] = m.Content
		}
	}
	out := files[:0:0]
	for _, f := range files {
		if content, ok := seen[f.path]; ok && strings.Contains(content, strings.TrimSuffix(f.text, "\n")) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// view returns the history as the model should see it now. The session
// keeps the full messages; only the request is shaped. The latest round's
// results always go in full.
func (a *Agent) view(files []focusedFile, o viewOpts) []llm.Message {
	msgs := a.hist.msgs
	out := cloneMessages(msgs)
	if !o.dedup && o.maskBefore <= 0 {
		return out
	}
	focused := make(map[string]focusedFile, len(files))
	for _, f := range files {
		focused[f.path] = f
	}
	lastAssistant := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			lastAssistant = i
			break
		}
	}
	calls := map[string]callInfo{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = callInfo{name: c.Name, args: c.Arguments}
		}
	}
	var superseded map[int]bool
	if o.dedup {
		superseded = a.supersededReads(calls)
	}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			for j, c := range m.ToolCalls {
				if o.dedup && i < lastAssistant {
					out[i].ToolCalls[j].Arguments = a.shortenArgs(c.Name, c.Arguments, focused)
				}
			}
		case llm.RoleTool:
			if i > lastAssistant {
				continue // the latest round: complete, the first time the model sees it
			}
			ci := calls[m.ToolCallID]
			if superseded[i] && !hasFocused(focused, a.argPath(ci.args)) {
				out[i].Content = fmt.Sprintf("[read_file %s: superseded by a later read of it below]", a.argPath(ci.args))
				continue
			}
			out[i].Content = a.shortenResult(ci, m.Content, i < o.maskBefore, o.dedup, i < len(msgs)-oldMessages, focused)
		}
	}
	return out
}

// supersededReads returns the history indices of read_file results that a
// later read of the same file shows again: a later read of the whole file,
// or of the same lines. Only the latest one is worth sending (stale
// versions would contradict it); the others become one-line pointers.
func (a *Agent) supersededReads(calls map[string]callInfo) map[int]bool {
	type readRange struct{ start, end int }
	msgs := a.hist.msgs
	whole := map[string]bool{}
	ranges := map[string]map[readRange]bool{}
	out := map[int]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleTool || strings.HasPrefix(m.Content, errorPrefix) {
			continue
		}
		ci := calls[m.ToolCallID]
		if ci.name != "read_file" {
			continue
		}
		var args struct {
			StartLine int `json:"start_line"`
			EndLine   int `json:"end_line"`
		}
		_ = json.Unmarshal([]byte(ci.args), &args)
		path, r := a.argPath(ci.args), readRange{args.StartLine, args.EndLine}
		if path == "" {
			continue
		}
		if whole[path] || ranges[path][r] {
			out[i] = true
			continue
		}
		if r == (readRange{}) {
			whole[path] = true
		} else {
			if ranges[path] == nil {
				ranges[path] = map[readRange]bool{}
			}
			ranges[path][r] = true
		}
	}
	return out
}

// shortenResult is an older tool result as sent again.
func (a *Agent) shortenResult(ci callInfo, content string, masked, dedup, old bool, focused map[string]focusedFile) string {
	shellN, readN := shellKeep, readKeep
	if old {
		shellN, readN = oldShellKeep, oldReadKeep
	}
	isErr := strings.HasPrefix(content, errorPrefix)
	if masked && len(content) >= maskMinChars && !isErr {
		return fmt.Sprintf("[%s output omitted to save context (%d chars); call it again if you need it]", ci.name, len(content))
	}
	if !dedup {
		return content
	}
	switch {
	case isErr:
		return headTail(content, shellN)
	case fileTools[ci.name]:
		path := a.argPath(ci.args)
		if f, ok := focused[path]; ok {
			if ci.name == "read_file" {
				return fmt.Sprintf("[read_file %s: %d lines — current content in focused files]", path, f.lines)
			}
			return fmt.Sprintf("[%s — current content of %s in focused files]", firstLineOf(content), path)
		}
		if ci.name == "read_file" && len(content) > readN {
			return headTail(content, readN) + "\n[" + path + " is no longer in focused files; read it again if you need it]"
		}
		return content
	case ci.name == "shell_exec":
		return headTail(content, shellN)
	}
	return content
}

// shortenArgs abbreviates an older call's arguments: write_file's content
// is in the focused files, long edit strings are cut. The result stays
// valid JSON because servers parse it.
func (a *Agent) shortenArgs(name, args string, focused map[string]focusedFile) string {
	if name != "write_file" && name != "edit_file" {
		return args
	}
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return args
	}
	changed := false
	if name == "write_file" {
		if content, ok := m["content"].(string); ok {
			if f, ok := focused[a.argPath(args)]; ok && len(content) > 200 {
				m["content"] = fmt.Sprintf("[%d chars — current content in focused files, %d lines]", len(content), f.lines)
				changed = true
			}
		}
	} else {
		for _, k := range []string{"old_string", "new_string"} {
			if s, ok := m[k].(string); ok && len(s) > argsKeepChars {
				m[k] = headTail(s, argsKeepChars)
				changed = true
			}
		}
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return string(b)
}

// argPath is the workspace-relative path named by a file tool's arguments,
// normalised the way the tools report it ("" when it has none).
func (a *Agent) argPath(args string) string {
	var p struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(args), &p) != nil || p.Path == "" {
		return ""
	}
	if rel, ok := a.paths[p.Path]; ok {
		return rel
	}
	rel := p.Path
	if abs, err := a.opts.Workspace.Resolve(p.Path); err == nil {
		rel = a.opts.Workspace.Rel(abs)
	}
	if a.paths == nil {
		a.paths = map[string]string{}
	}
	a.paths[p.Path] = rel
	return rel
}

// headTail keeps the first and last parts of s within about n chars.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := cutRunes(s, n*2/3)
	tail := s[len(s)-(n-len(head)):]
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n[... %d chars cut ...]\n%s", head, len(s)-len(head)-len(tail), tail)
}

// cutRunes shortens s to at most n bytes without splitting a character.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func hasFocused(focused map[string]focusedFile, path string) bool {
	_, ok := focused[path]
	return ok
}
