package planspec

import (
	"container/heap"
	"fmt"
	"slices"
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
// ready item (a min-heap of ready indices), so the order is stable for
// people reading it and a 10 000-task plan file orders in milliseconds. A
// dependency outside ids is an error; a loop is an error wrapping ErrCycle
// that names one cycle.
func TopoOrder(ids []string, deps func(i int) []string) ([]int, error) {
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	waiting := make([]int, len(ids)) // dependencies not yet emitted (duplicates count once)
	dependents := make([][]int, len(ids))
	for i, id := range ids {
		seen := map[int]bool{}
		for _, d := range deps(i) {
			j, ok := index[d]
			if !ok {
				return nil, fmt.Errorf("%w: task %q depends on unknown task %q", ErrInvalidPlan, id, d)
			}
			if !seen[j] {
				seen[j] = true
				waiting[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	ready := &intHeap{}
	for i := range ids {
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	emitted := make([]bool, len(ids))
	order := make([]int, 0, len(ids))
	for ready.Len() > 0 {
		next := heap.Pop(ready).(int)
		emitted[next] = true
		order = append(order, next)
		for _, k := range dependents[next] {
			if waiting[k]--; waiting[k] == 0 {
				heap.Push(ready, k)
			}
		}
	}
	if len(order) < len(ids) {
		return nil, &CycleError{IDs: ids, Path: cyclePath(deps, index, emitted)}
	}
	return order, nil
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// cyclePath is one cycle among the items Kahn could not emit, as indices
// with the first repeated at the end. Each of them has a dependency that
// was not emitted either, so following the first such dependency from any
// of them must revisit an item: that loop is a cycle.
func cyclePath(deps func(int) []string, index map[string]int, emitted []bool) []int {
	seenAt := map[int]int{}
	var walk []int
	for i := slices.Index(emitted, false); ; {
		if pos, seen := seenAt[i]; seen {
			return append(walk[pos:], i)
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
}
