package planspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
		tasks   int
	}{
		{name: "minimal", args: `{"tasks":[{"id":"a","description":"do a","dependencies":[]}]}`, tasks: 1},
		{name: "extra fields ignored", args: `{"tasks":[{"id":"a","description":"x","dependencies":null,"priority":1}],"testing":"go test"}`, tasks: 1},
		{name: "empty", args: "  ", wantErr: "create_plan arguments are empty"},
		{name: "not JSON", args: `{"tasks": [`, wantErr: "not valid JSON"},
		{name: "steps is an alias of tasks", args: `{"steps":[{"id":"a","description":"x","dependencies":[]},{"id":"b","description":"y","dependencies":["a"]}]}`, tasks: 2},
		{name: "tasks win over steps", args: `{"tasks":[{"id":"a","description":"x","dependencies":[]}],"steps":[{"id":"b"},{"id":"c"}]}`, tasks: 1},
		{name: "wrong type names the field", args: `{"tasks":[{"id":"a","description":"x","dependencies":"b"}]}`, wantErr: `field "tasks.dependencies" must be []string, not a JSON string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.args)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() error = %v, want ErrInvalidPlan containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(p.Tasks) != tt.tasks {
				t.Errorf("got %d tasks, want %d", len(p.Tasks), tt.tasks)
			}
		})
	}
}

func task(id string, deps ...string) Task {
	return Task{ID: id, Description: "do " + id, Dependencies: deps}
}

func TestValidate(t *testing.T) {
	many := make([]Task, 51)
	for i := range many {
		many[i] = task(fmt.Sprintf("t%d", i))
	}
	tests := []struct {
		name   string
		plan   *Plan
		limits Limits
		want   []string // problems, exactly and in order; nil = valid
	}{
		{name: "valid diamond", plan: &Plan{Tasks: []Task{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")}}},
		{name: "nil plan", plan: nil, want: []string{"no plan given"}},
		{name: "ids are reserved only when asked", plan: &Plan{Tasks: []Task{task("summary")}}},
		{name: "no tasks", plan: &Plan{}, want: []string{"the plan has no tasks: give at least one task"}},
		{name: "reserved id", plan: &Plan{Tasks: []Task{task("summary")}},
			limits: Limits{Reserved: map[string]string{"summary": "reports/summary.md is the run summary"}}, want: []string{`task id "summary" is reserved (reports/summary.md is the run summary): choose another id`}},
		{name: "too many tasks", plan: &Plan{Tasks: many}, want: []string{"the plan has 51 tasks; the limit is 50: merge small steps into larger ones"}},
		{name: "custom task limit", plan: &Plan{Tasks: []Task{task("a"), task("b")}}, limits: Limits{MaxTasks: 1},
			want: []string{"the plan has 2 tasks; the limit is 1: merge small steps into larger ones"}},
		{name: "unknown dependency", plan: &Plan{Tasks: []Task{task("a"), task("b", "z")}},
			want: []string{`task "b" depends on unknown task "z"`}},
		{name: "self dependency", plan: &Plan{Tasks: []Task{task("a", "a")}}, want: []string{`task "a" depends on itself`}},
		{name: "cycle", plan: &Plan{Tasks: []Task{task("a", "b"), task("b", "a")}},
			want: []string{"dependency cycle: a -> b -> a: remove one of these dependencies"}},
		{name: "a cycle beside other problems", plan: &Plan{Tasks: []Task{task("a", "b", "z"), task("b", "a"), {ID: "c"}}},
			want: []string{`task "c" has an empty description: say what to change and how to check it`,
				`task "a" depends on unknown task "z"`, "dependency cycle: a -> b -> a: remove one of these dependencies"}},
		{name: "duplicate id", plan: &Plan{Tasks: []Task{task("a"), task("a")}},
			want: []string{`task id "a" is used by more than one task: ids must be unique`}},
		{name: "id escaping its directory", plan: &Plan{Tasks: []Task{task("../x")}},
			want: []string{`task 1: id "../x" starts with '.': ids must start with a letter, digit, '-' or '_'`}},
		{name: "id with a space", plan: &Plan{Tasks: []Task{task("a b")}},
			want: []string{`task 1: id "a b" contains ' ': only letters, digits, '-', '_' and '.' are allowed`}},
		{name: "empty id", plan: &Plan{Tasks: []Task{{Description: "x"}}},
			want: []string{"task 1: id is empty: use 1 to 64 letters, digits, '-', '_' or '.'"}},
		{name: "empty description", plan: &Plan{Tasks: []Task{{ID: "a", Description: " \n"}}},
			want: []string{`task "a" has an empty description: say what to change and how to check it`}},
		{name: "long description", plan: &Plan{Tasks: []Task{{ID: "a", Description: strings.Repeat("é", 11)}}}, limits: Limits{MaxDescription: 10},
			want: []string{`task "a" description is 11 characters; the limit is 10: split the task or shorten it`}},
		{name: "acceptance problems", plan: &Plan{Tasks: []Task{{ID: "a", Description: "x", Acceptance: []string{"go test ./...", " ", "true"}}}},
			limits: Limits{MaxAcceptance: 2},
			want:   []string{`task "a" has 3 acceptance commands; the limit is 2`, `task "a" acceptance command 2 is empty`}},
		{name: "a task budget under both names, the same", plan: &Plan{Tasks: []Task{{ID: "a", Description: "x", BudgetTokens: 5, TaskBudgetTokens: 5}}}},
		{name: "task budget problems", plan: &Plan{Tasks: []Task{{ID: "a", Description: "x", BudgetTokens: 5, TaskBudgetTokens: 6},
			{ID: "b", Description: "x", TaskBudgetTokens: -1}}},
			want: []string{`task "a" has budget_tokens 5 and task_budget_tokens 6: both name the task's token budget; give one`,
				`task "b" task_budget_tokens is -1: want 0 (the run's task_budget_tokens) or more`}},
		{name: "attempts within bounds", plan: &Plan{Tasks: []Task{{ID: "a", Description: "x", Attempts: 3}, {ID: "b", Description: "x", Attempts: MaxAttempts}}}},
		{name: "attempts out of bounds", plan: &Plan{Tasks: []Task{{ID: "a", Description: "x", Attempts: -1}, {ID: "b", Description: "x", Attempts: MaxAttempts + 1}}},
			want: []string{`task "a" attempts is -1: want 1 to 8 (or omit it for the run's attempts setting)`,
				`task "b" attempts is 9: want 1 to 8 (or omit it for the run's attempts setting)`}},
		{name: "every problem is listed", plan: &Plan{Tasks: []Task{task("a", "x"), {ID: "b"}, task("c", "y")}},
			want: []string{`task "b" has an empty description: say what to change and how to check it`,
				`task "a" depends on unknown task "x"`, `task "c" depends on unknown task "y"`}},
		{name: "problems are capped", plan: &Plan{Tasks: []Task{task("a", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")}},
			want: []string{`task "a" depends on unknown task "1"`, `task "a" depends on unknown task "2"`,
				`task "a" depends on unknown task "3"`, `task "a" depends on unknown task "4"`,
				`task "a" depends on unknown task "5"`, `task "a" depends on unknown task "6"`,
				`task "a" depends on unknown task "7"`, `task "a" depends on unknown task "8"`,
				`task "a" depends on unknown task "9"`, `task "a" depends on unknown task "10"`, "and 2 more problems"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.plan, tt.limits)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("Validate() = %v (%T), want *ValidationError wrapping ErrInvalidPlan", err, err)
			}
			if !slices.Equal(ve.Problems, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", ve.Problems, tt.want)
			}
			if err.Error() != strings.Join(tt.want, "; ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestValidateNamesTheTasksOfTheCycle(t *testing.T) {
	p := &Plan{Tasks: []Task{task("x"), task("a", "c"), task("b"), task("c", "a", "b")}}
	var ve *ValidationError
	if err := Validate(p, Limits{}); !errors.As(err, &ve) || !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("Validate() = %v, want a ValidationError", err)
	}
	if !slices.Equal(ve.Cycle, []int{1, 3, 1}) || !slices.Equal(ve.Tasks, []int{1}) {
		t.Errorf("cycle at %v, problems about tasks %v; want [1 3 1] and [1]", ve.Cycle, ve.Tasks)
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name    string
		tasks   []Task
		want    []string
		wantErr string
	}{
		{name: "plan order when independent", tasks: []Task{task("b"), task("a")}, want: []string{"b", "a"}},
		{name: "dependencies first", tasks: []Task{task("api", "store"), task("store")}, want: []string{"store", "api"}},
		{name: "earliest ready task first", tasks: []Task{task("b", "a"), task("a"), task("c", "a")}, want: []string{"a", "b", "c"}},
		{name: "cycle is named", tasks: []Task{task("x"), task("a", "b"), task("b", "a")}, wantErr: "dependency cycle: a -> b -> a"},
		{name: "self dependency is a cycle", tasks: []Task{task("a", "a")}, wantErr: "dependency cycle: a -> a"},
		{name: "unknown dependency", tasks: []Task{task("a", "z")}, wantErr: `task "a" depends on unknown task "z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Order(&Plan{Tasks: tt.tasks})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Order() error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "cycle") != errors.Is(err, ErrCycle) {
					t.Errorf("errors.Is(%v, ErrCycle) = %v", err, !strings.Contains(tt.wantErr, "cycle"))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(got))
			for i, task := range got {
				ids[i] = task.ID
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("Order() = %v, want %v", ids, tt.want)
			}
		})
	}
}

type paramsSchema struct {
	Type       string                     `json:"type"`
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
}

type taskSchema struct {
	Type  string `json:"type"`
	Items struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"items"`
}

func TestCreatePlanTool(t *testing.T) {
	tests := []struct {
		name       string
		opts       ToolOptions
		desc       string // prefix of the function description
		taskFields []string
		planFields []string
	}{
		{name: "planner", opts: ToolOptions{Acceptance: true}, desc: "Submit the plan for the goal. Call it exactly once",
			taskFields: []string{"acceptance", "dependencies", "description", "id", "title"},
			planFields: []string{"overview", "risks", "tasks", "title"}},
		{name: "planner with attempts", opts: ToolOptions{Acceptance: true, Attempts: true}, desc: "Submit the plan for the goal.",
			taskFields: []string{"acceptance", "attempts", "dependencies", "description", "id", "title"},
			planFields: []string{"overview", "risks", "tasks", "title"}},
		{name: "chat", opts: ToolOptions{Description: "Make a plan.", TaskRisks: true, Testing: true}, desc: "Make a plan.",
			taskFields: []string{"dependencies", "description", "id", "risks", "title"},
			planFields: []string{"overview", "risks", "tasks", "testing_strategy", "title"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := CreatePlanTool(tt.opts)
			b := f.Parameters
			var params paramsSchema
			if err := json.Unmarshal(b, &params); err != nil {
				t.Fatalf("schema %s: %v", b, err)
			}
			var tasks taskSchema
			if err := json.Unmarshal(params.Properties["tasks"], &tasks); err != nil {
				t.Fatalf("tasks schema %s: %v", params.Properties["tasks"], err)
			}
			items := tasks.Items
			switch {
			case f.Name != "create_plan" || !strings.HasPrefix(f.Description, tt.desc):
				t.Errorf("tool = %s %q", f.Name, f.Description)
			case params.Type != "object" || !slices.Equal(params.Required, []string{"tasks"}):
				t.Errorf("parameters = %s", b)
			case tasks.Type != "array" || items.Type != "object":
				t.Errorf("tasks = %s", b)
			case !slices.Equal(items.Required, []string{"id", "description", "dependencies"}):
				t.Errorf("task required = %v", items.Required)
			}
			if got := slices.Sorted(maps.Keys(items.Properties)); !slices.Equal(got, tt.taskFields) {
				t.Errorf("task fields = %v, want %v", got, tt.taskFields)
			}
			if got := slices.Sorted(maps.Keys(params.Properties)); !slices.Equal(got, tt.planFields) {
				t.Errorf("plan fields = %v, want %v", got, tt.planFields)
			}
		})
	}
}

func TestProblem(t *testing.T) {
	_, parseErr := Parse("")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "parse error loses the prefix", err: parseErr, want: `create_plan arguments are empty: pass {"tasks": [{"id", "description", "dependencies"}]}`},
		{name: "validation error is unchanged", err: Validate(&Plan{}, Limits{}), want: "the plan has no tasks: give at least one task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Problem(tt.err); got != tt.want {
				t.Errorf("Problem() = %q, want %q", got, tt.want)
			}
		})
	}
}

// An empty acceptance command is the problem of its task, whatever its
// place in the task's list: a plan file names that task's line.
func TestValidateEmptyAcceptanceNamesItsTask(t *testing.T) {
	p := &Plan{Tasks: []Task{
		{ID: "a", Description: "a"},
		{ID: "b", Description: "b"},
		{ID: "c", Description: "c", Acceptance: []string{"true", " "}},
	}}
	var ve *ValidationError
	if err := Validate(p, Limits{}); !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want a ValidationError", err)
	}
	if len(ve.Tasks) != 1 || ve.Tasks[0] != 2 || !strings.Contains(ve.Problems[0], `task "c" acceptance command 2 is empty`) {
		t.Errorf("problems %q of tasks %v, want task c's (index 2) acceptance command 2", ve.Problems, ve.Tasks)
	}
}
