package planspec

import (
	"fmt"
	"slices"
	"strings"
)

// Order returns p's tasks in dependency order, stable by plan order. The
// error wraps ErrCycle and names the loop; Validate has already rejected
// such a plan, so callers of a validated plan can treat it as a safeguard.
func Order(p *Plan) ([]Task, error) {
	ids := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i] = t.ID
	}
	order, err := TopoOrder(ids, func(i int) []string { return p.Tasks[i].Dependencies })
	if err != nil {
		return nil, err
	}
	out := make([]Task, len(order))
	for k, i := range order {
		out[k] = p.Tasks[i]
	}
	return out, nil
}

// TopoOrder orders the items named by ids (unique) so each comes after the
// items deps(i) names. It is Kahn's algorithm that always emits the earliest
// ready item, so the order is stable for people reading it; plans are small
// (tens of tasks), so the quadratic scan is fine. A dependency outside ids
// is an error; a loop is an error wrapping ErrCycle that names one cycle.
func TopoOrder(ids []string, deps func(i int) []string) ([]int, error) {
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	for i, id := range ids {
		for _, d := range deps(i) {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: task %q depends on unknown task %q", ErrInvalidPlan, id, d)
			}
		}
	}
	emitted := make([]bool, len(ids))
	order := make([]int, 0, len(ids))
	for len(order) < len(ids) {
		next := -1
		for i := range ids {
			if !emitted[i] && !slices.ContainsFunc(deps(i), func(d string) bool { return !emitted[index[d]] }) {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("%w: %s", ErrCycle, cyclePath(ids, deps, index, emitted))
		}
		emitted[next] = true
		order = append(order, next)
	}
	return order, nil
}

// cyclePath names one cycle among the items Kahn could not emit. Each of
// them has a dependency that was not emitted either, so following the first
// such dependency from any of them must revisit an item: that loop is a cycle.
func cyclePath(ids []string, deps func(int) []string, index map[string]int, emitted []bool) string {
	seenAt := map[int]int{}
	var walk []int
	for i := slices.Index(emitted, false); ; {
		if pos, seen := seenAt[i]; seen {
			walk = append(walk[pos:], i)
			break
		}
		seenAt[i] = len(walk)
		walk = append(walk, i)
		for _, d := range deps(i) {
			if j := index[d]; !emitted[j] {
				i = j
				break
			}
		}
	}
	names := make([]string, len(walk))
	for k, i := range walk {
		names[k] = ids[i]
	}
	return strings.Join(names, " -> ")
}
