package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/planspec"
)

// MaxFileTasks bounds a plan file: a checked-in task graph may be far
// larger than what a planner is allowed to produce.
const MaxFileTasks = 10000

// maxFileSize bounds what ReadFile reads (10 000 tasks of a few hundred
// bytes each fit easily).
const maxFileSize = 64 << 20

// ReadFile reads a plan file: YAML or JSON (JSON is read as YAML, so
// `planagent plan --json` output is a valid file) in the create_plan
// schema, validated as a planner's plan is, up to MaxFileTasks tasks.
// Every error names the file and, where it has one, the line.
func ReadFile(file string) (*Plan, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("plan file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("plan file %s is not a regular file: give the path of a YAML or JSON plan", file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read plan file %s: %w", file, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("plan file %s is larger than %d MiB", file, maxFileSize>>20)
	}
	return ParseFile(file, data)
}

// fileDoc is a plan file's top level: the plan, with "steps" accepted for
// "tasks" as create_plan accepts it.
type fileDoc struct {
	Plan  `yaml:",inline"`
	Steps []Task `yaml:"steps"`
}

// ParseFile decodes and validates the content of a plan file called name.
// Unlike create_plan arguments (where models add fields freely), an
// unknown field is an error: in a file it is a typo that would silently
// drop, say, a task's dependencies.
func ParseFile(name string, data []byte) (*Plan, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: the plan file is empty: write {title, overview, tasks: [{id, description, dependencies}]} in YAML or JSON (see `planagent plan GOAL --json`)", name)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fileError(name, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(root.Content) > 0 {
			line = root.Content[0].Line
		}
		return nil, fmt.Errorf("%w: %s:%d: a plan file is a mapping with title, overview and tasks, not a %s", ErrInvalidPlan, name, line, nodeKind(&root))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var doc fileDoc
	var decoded []string // "line: problem" of what did not decode
	if err := dec.Decode(&doc); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fileError(name, err) // a syntax error: nothing was decoded
		}
		// The decoder went on past the bad fields: the rest of the plan is
		// validated too, so every problem comes in one run.
		decoded = te.Errors
	}
	p := doc.Plan
	tasksKey := "tasks"
	if len(p.Tasks) == 0 && len(doc.Steps) > 0 {
		p.Tasks, tasksKey = doc.Steps, "steps"
	}
	lines := taskLines(root.Content[0], tasksKey)
	problems := fileProblems(name, decoded)
	if err := Validate(&p, Limits{MaxTasks: MaxFileTasks}); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		problems = append(problems, validationProblems(name, ve, lines, decodedTasks(decoded, lines))...)
	}
	if len(problems) == 0 {
		return &p, nil
	}
	byLine(name, problems)
	return nil, fmt.Errorf("%w:\n%s", ErrInvalidPlan, strings.Join(problems, "\n"))
}

// validationProblems are ve's problems as "file:line: problem" lines. A
// problem of a task whose fields did not decode is left out (its decode
// error says what is wrong; the task's missing field would only echo it),
// and so are the plan's own problems then (no tasks, when the tasks list
// did not decode). A cycle names the line of every task around it.
func validationProblems(name string, ve *ValidationError, lines []int, undecoded map[int]bool) []string {
	lineOf := func(task int) int {
		if task >= 0 && task < len(lines) {
			return lines[task]
		}
		return 0
	}
	var out []string
	for i, problem := range ve.Problems {
		task := -1
		if i < len(ve.Tasks) {
			task = ve.Tasks[i]
		}
		// A dependency that names no task is never an echo of a decode
		// error (a dependencies list that did not decode names none).
		echo := !strings.Contains(problem, " depends on ")
		if (undecoded[task] && echo) || (task < 0 && len(undecoded) > 0) {
			continue
		}
		if len(ve.Cycle) > 0 && task == ve.Cycle[0] && strings.HasPrefix(problem, planspec.ErrCycle.Error()) {
			at := make([]string, len(ve.Cycle))
			for k, c := range ve.Cycle {
				at[k] = fmt.Sprint(lineOf(c))
			}
			problem += " (the tasks on lines " + strings.Join(at, " -> ") + ")"
		}
		if line := lineOf(task); line > 0 {
			out = append(out, fmt.Sprintf("%s:%d: %s", name, line, problem))
		} else {
			out = append(out, fmt.Sprintf("%s: %s", name, problem))
		}
	}
	return out
}

// byLine orders "name:line: problem" lines by line, as an editor lists
// them; lines without one (the plan's own problems) come first, "and N
// more problems" last, and the order of the problems of one line is kept.
func byLine(name string, problems []string) {
	lineOf := func(p string) int {
		if strings.HasSuffix(p, " more problems") {
			return math.MaxInt32
		}
		rest, ok := strings.CutPrefix(p, name+":")
		if !ok {
			return 0
		}
		n, _, _ := strings.Cut(rest, ":")
		line, err := strconv.Atoi(n)
		if err != nil {
			return 0
		}
		return line
	}
	slices.SortStableFunc(problems, func(a, b string) int { return lineOf(a) - lineOf(b) })
}

// decodedTasks are the indices of the tasks (starting at lines) that the
// decode errors are in; -1 for an error outside every task.
func decodedTasks(errs []string, lines []int) map[int]bool {
	in := map[int]bool{}
	for _, e := range errs {
		m := yamlLine.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			in[-1] = true
			continue
		}
		line, _ := strconv.Atoi(m[1])
		task := -1
		for k, start := range lines {
			if start <= line {
				task = k
			}
		}
		in[task] = true
	}
	return in
}

// taskLines returns the line of each task of the plan mapping m.
func taskLines(m *yaml.Node, key string) []int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			seq := m.Content[i+1].Content
			lines := make([]int, len(seq))
			for k, t := range seq {
				lines[k] = t.Line
			}
			return lines
		}
	}
	return nil
}

func nodeKind(root *yaml.Node) string {
	if len(root.Content) == 0 {
		return "empty document"
	}
	switch root.Content[0].Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "mapping"
}

var (
	yamlLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
)

// maxDecodeProblems keeps a file wrong on every line readable.
const maxDecodeProblems = 10

// fileError is a YAML error as "file:line: problem" lines.
func fileError(name string, err error) error {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{err.Error()}
	}
	return fmt.Errorf("%w:\n%s", ErrInvalidPlan, strings.Join(fileProblems(name, lines), "\n"))
}

// fileProblems rewrites YAML decode errors as "file:line: problem" lines,
// naming the known fields when a field is unknown; at most
// maxDecodeProblems of them.
func fileProblems(name string, errs []string) []string {
	out := make([]string, 0, len(errs))
	for i, l := range errs {
		if i == maxDecodeProblems {
			out = append(out, fmt.Sprintf("%s: and %d more problems", name, len(errs)-i))
			break
		}
		l = strings.TrimSpace(l)
		m := yamlLine.FindStringSubmatch(l)
		if m == nil {
			out = append(out, fmt.Sprintf("%s: %s", name, strings.TrimPrefix(l, "yaml: ")))
			continue
		}
		problem := m[2]
		if f := unknownField.FindStringSubmatch(problem); f != nil {
			if strings.HasSuffix(f[2], ".Task") {
				problem = fmt.Sprintf("unknown task field %q (a task has %s)", f[1], strings.Join(fieldNames(reflect.TypeFor[Task]()), ", "))
			} else {
				problem = fmt.Sprintf("unknown plan field %q (a plan has %s)", f[1], strings.Join(fieldNames(reflect.TypeFor[fileDoc]()), ", "))
			}
		}
		out = append(out, fmt.Sprintf("%s:%s: %s", name, m[1], problem))
	}
	return out
}

// fieldNames are the YAML keys of struct type t in field order, inline
// structs expanded: what the decoder accepts, so the list cannot drift.
func fieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case strings.Contains(opts, "inline"):
			names = append(names, fieldNames(f.Type)...)
		case name != "" && name != "-":
			names = append(names, name)
		}
	}
	return names
}
