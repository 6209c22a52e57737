package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const yamlPlan = `title: Add a health check
overview: A /healthz endpoint and its test.
testing_strategy: go test ./...
tasks:
  - id: handler
    title: The handler
    description: |
      Add GET /healthz returning 200 "ok".
    dependencies: []
    acceptance: ["go build ./..."]
  - id: test
    description: Test the handler.
    dependencies: [handler]
`

func writePlanFile(t *testing.T, name, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestReadFileYAMLAndJSON(t *testing.T) {
	p, err := ReadFile(writePlanFile(t, "plan.yaml", yamlPlan))
	if err != nil {
		t.Fatalf("ReadFile(yaml): %v", err)
	}
	if p.Title != "Add a health check" || len(p.Tasks) != 2 || p.Tasks[1].Dependencies[0] != "handler" ||
		p.Tasks[0].Acceptance[0] != "go build ./..." || p.TestingStrategy != "go test ./..." ||
		p.Tasks[0].Description != "Add GET /healthz returning 200 \"ok\".\n" {
		t.Errorf("yaml plan decoded as %+v", p)
	}
	// What `planagent plan GOAL --json` prints (an indented encoding of the
	// plan, null dependencies included) is a valid plan file.
	p.Tasks[0].Dependencies = nil
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	q, err := ReadFile(writePlanFile(t, "plan.json", string(b)+"\n"))
	if err != nil {
		t.Fatalf("ReadFile(json): %v\n%s", err, b)
	}
	if q.Title != p.Title || len(q.Tasks) != 2 || q.Tasks[0].Description != p.Tasks[0].Description || q.Tasks[1].Dependencies[0] != "handler" {
		t.Errorf("json plan decoded as %+v", q)
	}
	steps, err := ParseFile("steps.yaml", []byte("title: t\noverview: o\nsteps:\n  - id: a\n    description: do a\n"))
	if err != nil || len(steps.Tasks) != 1 || steps.Tasks[0].ID != "a" {
		t.Errorf("steps alias: %+v, %v", steps, err)
	}
}

// A task's token budget has the config key's name too: task_budget_tokens
// is budget_tokens, alone or with the same value, and reaches the graph.
func TestReadFileTaskBudgetNames(t *testing.T) {
	for _, fields := range []string{"budget_tokens: 500", "task_budget_tokens: 500", "budget_tokens: 500\n    task_budget_tokens: 500"} {
		t.Run(fields, func(t *testing.T) {
			p, err := ParseFile("plan.yaml", []byte("title: x\ntasks:\n  - id: a\n    description: a\n    "+fields+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			g, err := Graph(p)
			if err != nil {
				t.Fatal(err)
			}
			if a, _ := g.Get("a"); a.BudgetTokens != 500 {
				t.Errorf("the task's budget is %d, want 500", a.BudgetTokens)
			}
		})
	}
}

// A plan file's attempts reach the graph; out of bounds, the file is
// refused at its line.
func TestReadFileAttempts(t *testing.T) {
	p, err := ParseFile("plan.yaml", []byte("title: x\ntasks:\n  - id: a\n    description: a\n    attempts: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Graph(p)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := g.Get("a"); a.BestOf != 3 {
		t.Errorf("the task's attempts are %d, want 3", a.BestOf)
	}
	_, err = ParseFile("plan.yaml", []byte("title: x\ntasks:\n  - id: a\n    description: a\n    attempts: 12\n"))
	if err == nil || !strings.Contains(err.Error(), `plan.yaml:3: task "a" attempts is 12: want 1 to 8`) {
		t.Errorf("attempts 12: %v", err)
	}
}

func TestReadFileTenThousandTasks(t *testing.T) {
	var b strings.Builder
	b.WriteString("title: chain\noverview: a long chain\ntasks:\n")
	for i := range MaxFileTasks {
		fmt.Fprintf(&b, "  - id: t%05d\n    description: step %d\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "    dependencies: [t%05d]\n", i-1)
		}
	}
	p, err := ReadFile(writePlanFile(t, "big.yaml", b.String()))
	if err != nil {
		t.Fatalf("a %d-task plan: %v", MaxFileTasks, err)
	}
	if len(p.Tasks) != MaxFileTasks {
		t.Fatalf("%d tasks, want %d", len(p.Tasks), MaxFileTasks)
	}
	b.WriteString("  - id: extra\n    description: one too many\n")
	_, err = ReadFile(writePlanFile(t, "big.yaml", b.String()))
	if err == nil || !strings.Contains(err.Error(), "the limit is 10000") {
		t.Errorf("a %d-task plan: err = %v, want the limit named", MaxFileTasks+1, err)
	}
}

func TestReadFileErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string // each must appear in the error
	}{
		{"syntax", "title: x\ntasks:\n  - id: a\n    description: a: b\n", []string{"plan.yaml:4: mapping values are not allowed"}},
		{"unknown task field", yamlPlan + "  - id: c\n    description: c\n    dependecies: [test]\n",
			[]string{`plan.yaml:16: unknown task field "dependecies"`,
				"(a task has id, title, description, dependencies, acceptance, risks, budget_tokens, task_budget_tokens, attempts)"}},
		{"unknown plan field", "title: x\nowner: me\ntasks:\n  - id: a\n    description: a\n",
			[]string{`plan.yaml:2: unknown plan field "owner"`, "(a plan has title, overview, tasks, risks, testing_strategy, steps)"}},
		{"two task budgets", yamlPlan + "  - id: c\n    description: c\n    budget_tokens: 500\n    task_budget_tokens: 600\n",
			[]string{`plan.yaml:14: task "c" has budget_tokens 500 and task_budget_tokens 600`}},
		{"wrong type", "title: x\ntasks:\n  - id: a\n    description: a\n    dependencies: b\n",
			[]string{"plan.yaml:5: cannot unmarshal"}},
		{"unknown dependency", yamlPlan + "  - id: c\n    description: c\n    dependencies: [nope]\n",
			[]string{`plan.yaml:14: task "c" depends on unknown task "nope"`}},
		{"duplicate id", yamlPlan + "  - id: test\n    description: again\n",
			[]string{`plan.yaml:14: task id "test" is used by more than one task`}},
		{"empty description", "title: x\ntasks:\n  - id: a\n    description: a\n  - id: b\n    description: \"  \"\n",
			[]string{`plan.yaml:5: task "b" has an empty description`}},
		{"bad id", "title: x\ntasks:\n  - id: a\n    description: a\n  - id: ../b\n    description: b\n",
			[]string{"plan.yaml:5: task 2:"}},
		{"reserved id", "title: x\ntasks:\n  - id: summary\n    description: a\n", []string{`plan.yaml:3: task id "summary" is reserved`}},
		{"cycle", "title: x\ntasks:\n  - id: a\n    description: a\n    dependencies: [b]\n  - id: b\n    description: b\n    dependencies: [a]\n",
			[]string{"plan.yaml:3: dependency cycle: a -> b -> a: remove one of these dependencies (the tasks on lines 3 -> 6 -> 3)"}},
		{"no tasks", "title: x\noverview: y\n", []string{"plan.yaml: the plan has no tasks"}},
		{"empty", "\n  \n", []string{"plan.yaml: the plan file is empty"}},
		{"a list", "- id: a\n  description: a\n", []string{"plan.yaml:1: a plan file is a mapping", "not a list"}},
		{"duplicate key", "title: x\ntitle: y\ntasks: []\n", []string{"plan.yaml:2: ", "already defined"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("plan.yaml", []byte(tt.content))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.content)
			}
			if !errors.Is(err, ErrInvalidPlan) && tt.name != "empty" {
				t.Errorf("error does not wrap ErrInvalidPlan: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if _, err := ReadFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as plan file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing plan file: %v", err)
	}
}

// A plan file wrong in several places says all of it in one run: what did
// not decode, what does not validate and the cycle, each at its line.
func TestReadFileReportsEveryProblemAtOnce(t *testing.T) {
	content := `title: x
tasks:
  - id: a
    description: a
    dependencies: [c]
  - id: b
    description: " "
  - id: c
    description: c
    dependecies: [a]
    dependencies: [d, ghost]
  - id: d
    description: d
    dependencies: [a, nope]
`
	_, err := ParseFile("plan.yaml", []byte(content))
	if !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("err = %v, want ErrInvalidPlan", err)
	}
	// In line order, as an editor lists them; the unknown dependency of
	// task c is reported beside c's field error.
	want := []string{
		"plan.yaml:3: dependency cycle: a -> c -> d -> a: remove one of these dependencies (the tasks on lines 3 -> 8 -> 12 -> 3)",
		`plan.yaml:6: task "b" has an empty description: say what to change and how to check it`,
		`plan.yaml:8: task "c" depends on unknown task "ghost"`,
		`plan.yaml:10: unknown task field "dependecies" (a task has id, title, description, dependencies, acceptance, risks, budget_tokens, task_budget_tokens, attempts)`,
		`plan.yaml:12: task "d" depends on unknown task "nope"`,
	}
	got := strings.Split(err.Error(), "\n")[1:]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A field of the wrong type is one problem, not also the empty value the
// decoder left behind; and a file wrong everywhere gets a bounded list.
func TestReadFileDecodeProblems(t *testing.T) {
	_, err := ParseFile("plan.yaml", []byte("title: x\ntasks:\n  - id: a\n    description: [a, b]\n"))
	if err == nil || !strings.Contains(err.Error(), "plan.yaml:4: cannot unmarshal") || strings.Contains(err.Error(), "empty description") {
		t.Errorf("a description of the wrong type: %v", err)
	}
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range 15 {
		fmt.Fprintf(&b, "  - id: t%d\n    description: x\n    typo: 1\n", i)
	}
	_, err = ParseFile("plan.yaml", []byte(b.String()))
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 12 || lines[11] != "plan.yaml: and 5 more problems" {
		t.Errorf("15 unknown fields: %d lines:\n%v", len(lines), err)
	}
}
