package planspec

import (
	"errors"
	"testing"
)

// FuzzValidate: no plan JSON makes Parse or Validate panic, a rejection
// always wraps ErrInvalidPlan, and every accepted plan has an order that
// lists each task once, after its dependencies.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"tasks":[{"id":"a","description":"x","dependencies":[]}]}`,
		`{"tasks":[{"id":"a","description":"x","dependencies":["b"]},{"id":"b","description":"y","dependencies":["a"]}]}`,
		`{"title":"t","tasks":[{"id":"a","description":"x"},{"id":"b","description":"y","dependencies":["a","a"]},{"id":"c","description":"z","dependencies":["a","b"]}]}`,
		`{"tasks":[{"id":".","description":"x","dependencies":["."]}]}`,
		`{"tasks":null}`, `[]`, `null`, `{"tasks":[{}]}`, "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		p, err := Parse(args)
		if err != nil {
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("Parse error does not wrap ErrInvalidPlan: %v", err)
			}
			return
		}
		if err := Validate(p, Limits{}); err != nil {
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("Validate error does not wrap ErrInvalidPlan: %v", err)
			}
			return
		}
		tasks, err := Order(p)
		if err != nil {
			t.Fatalf("accepted plan has no order: %v\n%s", err, args)
		}
		order := make([]string, len(tasks))
		for i, task := range tasks {
			order[i] = task.ID
		}
		if len(order) != len(p.Tasks) {
			t.Fatalf("order %v has %d ids for %d tasks", order, len(order), len(p.Tasks))
		}
		pos := map[string]int{}
		for i, id := range order {
			if _, dup := pos[id]; dup {
				t.Fatalf("order %v lists %q twice", order, id)
			}
			pos[id] = i
		}
		for _, task := range p.Tasks {
			for _, d := range task.Dependencies {
				if pos[d] >= pos[task.ID] {
					t.Fatalf("order %v puts %q before its dependency %q", order, task.ID, d)
				}
			}
		}
	})
}
