package protocol

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Dependency is a finished task the command builds on.
type Dependency struct {
	ID      string `yaml:"id"`
	Summary string `yaml:"summary,omitempty"`
}

// Command is one attempt at one task, written by planagent to commands/<id>.md.
type Command struct {
	ID           string       `yaml:"id"`
	RunID        string       `yaml:"run_id"`
	Attempt      int          `yaml:"attempt"`
	Title        string       `yaml:"title"`
	Dependencies []Dependency `yaml:"dependencies,omitempty"`
	Resources    []string     `yaml:"resources,omitempty"`
	Hints        []string     `yaml:"hints,omitempty"`
	Acceptance   []string     `yaml:"acceptance,omitempty"`
	Timeout      Duration     `yaml:"timeout,omitempty"`
	// Workspace is the directory the task works in, relative to the volumes
	// root with slashes (attempts/<run>/<id>.<n>: the attempt's own copy of
	// the workspace); "" is the default workspace.
	Workspace string `yaml:"workspace,omitempty"`
	// TraceParent is the W3C traceparent of planagent's span of this
	// attempt: the coding agent's spans join the run's trace under it.
	TraceParent string `yaml:"traceparent,omitempty"`
	// BudgetTokens stops the agent once the task's tokens (prompt plus
	// completion, every model call) pass it: the report is failed with
	// reason "budget". 0 is no limit.
	BudgetTokens int `yaml:"budget_tokens,omitempty"`
	// Setup is a shell command the coding agent runs in the workspace
	// before the agent starts (the run's setup_command): installing
	// dependencies, generating code. Its failure fails the attempt.
	Setup string `yaml:"setup,omitempty"`
	Body  string `yaml:"-"` // the task description (markdown)
}

// ParseCommand parses a command file. name is the file's name or path: it is
// used in errors and, when it ends in ".md", must match the id.
func ParseCommand(name string, data []byte) (*Command, error) {
	c, err := parseCommand(name, data)
	return c, withFile(name, err)
}

func parseCommand(name string, data []byte) (*Command, error) {
	header, body, err := splitFile(data)
	if err != nil {
		return nil, err
	}
	root, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	c := &Command{Body: body}
	err = decodeFields("", root, []field{
		{"id", stringField(&c.ID)},
		{"run_id", stringField(&c.RunID)},
		{"attempt", intField(&c.Attempt)},
		{"title", stringField(&c.Title)},
		{"dependencies", dependenciesField(&c.Dependencies)},
		{"resources", stringListField(&c.Resources)},
		{"hints", stringListField(&c.Hints)},
		{"acceptance", stringListField(&c.Acceptance)},
		{"timeout", durationField(&c.Timeout)},
		{"workspace", stringField(&c.Workspace)},
		{"budget_tokens", intField(&c.BudgetTokens)},
		{"traceparent", stringField(&c.TraceParent)},
		{"setup", stringField(&c.Setup)},
	})
	if err != nil {
		return nil, err
	}
	c.normalize()
	if err := c.validate(name); err != nil {
		return nil, err
	}
	return c, nil
}

func dependenciesField(dst *[]Dependency) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		return listField(path, v, func(p string, e *yaml.Node) error {
			if e.Kind != yaml.MappingNode {
				return typeError(p, e, "a mapping like {id: t1, summary: ...}")
			}
			var d Dependency
			err := decodeFields(p+".", e, []field{
				{"id", stringField(&d.ID)},
				{"summary", stringField(&d.Summary)},
			})
			if err != nil {
				return err
			}
			*dst = append(*dst, d)
			return nil
		})
	}
}

// normalize makes empty lists nil, so that "hints: []" and no hints at all
// are the same command.
func (c *Command) normalize() {
	if len(c.Dependencies) == 0 {
		c.Dependencies = nil
	}
	c.Resources = nilIfEmpty(c.Resources)
	c.Hints = nilIfEmpty(c.Hints)
	c.Acceptance = nilIfEmpty(c.Acceptance)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// validate checks what the types cannot; name as for ParseCommand.
func (c *Command) validate(name string) error {
	if err := validateIDs(name, c.ID, c.RunID, c.Attempt); err != nil {
		return err
	}
	if c.Title == "" {
		return &ParseError{Field: "title", Problem: "required: a one-line title of the task"}
	}
	seen := make(map[string]bool, len(c.Dependencies))
	for i, d := range c.Dependencies {
		path := fmt.Sprintf("dependencies[%d].id", i)
		if err := ValidateID(d.ID); err != nil {
			return &ParseError{Field: path, Problem: err.Error()}
		}
		if d.ID == c.ID {
			return &ParseError{Field: path, Problem: fmt.Sprintf("task %q cannot depend on itself", c.ID)}
		}
		if seen[d.ID] {
			return &ParseError{Field: path, Problem: fmt.Sprintf("%q is listed twice", d.ID)}
		}
		seen[d.ID] = true
	}
	if c.Timeout < 0 {
		return &ParseError{Field: "timeout", Problem: fmt.Sprintf("must not be negative, got %s", c.Timeout)}
	}
	if c.BudgetTokens < 0 {
		return &ParseError{Field: "budget_tokens", Problem: fmt.Sprintf("must be 0 (no limit) or more, got %d", c.BudgetTokens)}
	}
	if c.Workspace != "" {
		if err := ValidateWorkspace(c.Workspace); err != nil {
			return &ParseError{Field: "workspace", Problem: err.Error()}
		}
	}
	if c.TraceParent != "" && !traceParent.MatchString(c.TraceParent) {
		return &ParseError{Field: "traceparent", Problem: fmt.Sprintf("%q is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", c.TraceParent)}
	}
	return nil
}

var traceParent = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// ValidateWorkspace checks a command's workspace: a clean relative slash
// path under attempts/ that cannot leave the volumes.
func ValidateWorkspace(w string) error {
	if path.IsAbs(w) || strings.Contains(w, "\\") || path.Clean(w) != w || w == "." ||
		strings.HasPrefix(w, "../") || w == ".." || !strings.HasPrefix(w, "attempts/") {
		return fmt.Errorf("%q is not a clean relative path under attempts/", w)
	}
	return nil
}

// validateIDs checks the fields commands and reports share.
func validateIDs(name, id, runID string, attempt int) error {
	if id == "" {
		return &ParseError{Field: "id", Problem: "required: the task id, the file name without \".md\""}
	}
	if err := ValidateID(id); err != nil {
		return &ParseError{Field: "id", Problem: err.Error()}
	}
	if want, ok := idFromFileName(name); ok && want != id {
		return &ParseError{Field: "id", Problem: fmt.Sprintf("%q does not match the file name: a file named %s.md must have id %q", id, want, want)}
	}
	if runID == "" {
		return &ParseError{Field: "run_id", Problem: "required: the id of the planagent run"}
	}
	if err := ValidateID(runID); err != nil {
		return &ParseError{Field: "run_id", Problem: err.Error()}
	}
	if attempt < 1 {
		return &ParseError{Field: "attempt", Problem: "must be >= 1"}
	}
	return nil
}

// header lays out the front matter in the order of the struct, leaving out
// empty optional fields.
func (c *Command) header() mapping {
	m := newMapping()
	m.str("id", c.ID)
	m.str("run_id", c.RunID)
	m.integer("attempt", c.Attempt)
	m.str("title", c.Title)
	if len(c.Dependencies) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, d := range c.Dependencies {
			dm := newMapping()
			dm.str("id", d.ID)
			if d.Summary != "" {
				dm.str("summary", d.Summary)
			}
			seq.Content = append(seq.Content, dm.n)
		}
		m.add("dependencies", seq)
	}
	for _, l := range []struct {
		key string
		v   []string
	}{{"resources", c.Resources}, {"hints", c.Hints}, {"acceptance", c.Acceptance}} {
		if len(l.v) > 0 {
			m.list(l.key, l.v)
		}
	}
	if c.Timeout != 0 {
		m.duration("timeout", c.Timeout)
	}
	if c.BudgetTokens != 0 {
		m.integer("budget_tokens", c.BudgetTokens)
	}
	if c.Workspace != "" {
		m.str("workspace", c.Workspace)
	}
	if c.TraceParent != "" {
		m.str("traceparent", c.TraceParent)
	}
	if c.Setup != "" {
		m.str("setup", c.Setup)
	}
	return m
}

// Marshal renders the command as a file. It refuses a command ParseCommand
// would refuse, and what it returns parses back to an equal command.
func (c *Command) Marshal() ([]byte, error) { return c.marshal("") }

func (c *Command) marshal(name string) ([]byte, error) {
	n := *c
	n.normalize()
	if err := n.validate(name); err != nil {
		return nil, withFile(name, err)
	}
	data, err := encodeFile(n.header(), n.Body)
	if err != nil {
		return nil, withFile(name, err)
	}
	// The check costs a parse of a small file and guarantees the contract
	// even where the YAML emitter surprises us.
	back, err := ParseCommand(name, data)
	if err != nil {
		return nil, fmt.Errorf("command %q does not survive encoding (a bug in package protocol): %w", c.ID, err)
	}
	if !reflect.DeepEqual(&n, back) {
		return nil, fmt.Errorf("command %q does not survive encoding (a bug in package protocol): it reads back as %+v", c.ID, back)
	}
	return data, nil
}
