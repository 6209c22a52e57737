package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/jsonschema"
	"github.com/codeagent/codeagent/internal/llm"
)

// Options tunes the tools that need it. Zero values take the defaults.
type Options struct {
	ShellTimeout time.Duration // default timeout of one shell_exec call (120s)
	OutputCap    int           // max characters of shell output kept (30000)
	Env          []string      // extra KEY=VALUE entries for shell_exec
	// Secrets are replaced by [redacted] in shell_exec output, so a command
	// that digs the API key out of a process environment cannot put it into
	// the history, the events file or the report.
	Secrets []string
	// HideEnv names variables shell_exec does not pass on, besides
	// OPENAI_API_KEY (the MCP servers' settings and the secrets they use).
	HideEnv []string
}

const (
	defaultShellTimeout = 120 * time.Second
	defaultOutputCap    = 30000
)

func (o Options) withDefaults() Options {
	if o.ShellTimeout <= 0 {
		o.ShellTimeout = defaultShellTimeout
	}
	if o.OutputCap <= 0 {
		o.OutputCap = defaultOutputCap
	}
	return o
}

// Set is an ordered collection of tools, looked up by name. A Set is not
// modified after construction; With and ReadOnly return new sets.
type Set struct {
	tools []Tool
}

// NewSet returns a set of tools in the given order; a later tool replaces an
// earlier one of the same name.
func NewSet(tools ...Tool) *Set {
	return (&Set{}).With(tools...)
}

// Coding is the full tool set of the coding agent.
func Coding(ws *Workspace, opts Options) *Set {
	return NewSet(NewReadFile(ws), NewWriteFile(ws), NewEditFile(ws), NewListDir(ws),
		NewGlob(ws), NewGrep(ws), NewShellExec(ws, opts))
}

// ReadOnly is the tool set for planning: looking, never changing.
func ReadOnly(ws *Workspace) *Set {
	return NewSet(NewReadFile(ws), NewListDir(ws), NewGlob(ws), NewGrep(ws))
}

// Get returns the tool called name.
func (s *Set) Get(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	for _, t := range s.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Definitions returns the schemas to offer the model, in order.
func (s *Set) Definitions() []llm.Tool {
	if s == nil {
		return nil
	}
	defs := make([]llm.Tool, len(s.tools))
	for i, t := range s.tools {
		defs[i] = t.Definition()
	}
	return defs
}

// Names returns the tool names in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.Name()
	}
	return names
}

// ReadOnly returns the subset of tools that never change the workspace.
func (s *Set) ReadOnly() *Set {
	out := &Set{}
	if s == nil {
		return out
	}
	for _, t := range s.tools {
		if t.ReadOnly() {
			out.tools = append(out.tools, t)
		}
	}
	return out
}

// With returns a new set with tools added; a tool with a name already in the
// set replaces it in place.
func (s *Set) With(tools ...Tool) *Set {
	out := &Set{}
	if s != nil {
		out.tools = append(out.tools, s.tools...)
	}
	for _, t := range tools {
		replaced := false
		for i, have := range out.tools {
			if have.Name() == t.Name() {
				out.tools[i] = t
				replaced = true
				break
			}
		}
		if !replaced {
			out.tools = append(out.tools, t)
		}
	}
	return out
}

// Call runs the tool name with the model's JSON arguments. Unknown tools and
// bad arguments come back as error results for the model to fix; a Go error
// means the tool itself broke (including a recovered panic).
func Call(ctx context.Context, s *Set, name string, args string) (res Result, err error) {
	t, ok := s.Get(name)
	if !ok {
		return errorResult("unknown tool %q; available: %s", name, strings.Join(s.Names(), ", ")), nil
	}
	defer func() {
		if r := recover(); r != nil {
			res = errorResult("tool %s failed with an internal error", name)
			err = fmt.Errorf("tool %s panicked: %v\n%s", name, r, debug.Stack())
		}
	}()
	return t.Run(ctx, json.RawMessage(args))
}

// NewFunc builds a Tool from a parameter struct P (json and description
// tags; fields without omitempty are required) and a run function. Argument
// decoding and the messages for bad arguments are shared with the built-in
// tools, so tools defined elsewhere (the agent's task tool) behave alike.
func NewFunc[P any](name, description string, readOnly bool, run func(ctx context.Context, p P) (Result, error)) Tool {
	def, schema := definition[P](name, description)
	return &funcTool[P]{name: name, readOnly: readOnly, def: def, schema: schema, run: run}
}

type funcTool[P any] struct {
	name     string
	readOnly bool
	def      llm.Tool
	schema   *jsonschema.Schema
	run      func(ctx context.Context, p P) (Result, error)
}

func (t *funcTool[P]) Name() string         { return t.name }
func (t *funcTool[P]) Definition() llm.Tool { return t.def }
func (t *funcTool[P]) ReadOnly() bool       { return t.readOnly }

func (t *funcTool[P]) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	p, err := decodeArgs[P](t.name, t.schema, args)
	if err != nil {
		return toolError(err), nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("tool %s: %w", t.name, err)
	}
	return t.run(ctx, p)
}
