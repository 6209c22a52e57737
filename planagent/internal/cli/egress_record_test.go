package cli

import (
	"fmt"
	"slices"
	"testing"
)

// The record of refusals is bounded per attempt: an agent retrying a
// blocked download in a loop does not grow the run's state.
func TestEgressRecordKeepsTheFirstFew(t *testing.T) {
	var e egressRecord
	if got := e.Refused("a.1"); got != nil {
		t.Errorf("empty record: %q", got)
	}
	for i := range maxRefusalsKept + 5 {
		e.add("a.1", fmt.Sprintf("refusal %d", i))
	}
	e.add("b.1", "one")
	got := e.Refused("a.1")
	if len(got) != maxRefusalsKept+1 || got[0] != "refusal 0" || got[maxRefusalsKept] != "and 5 more" {
		t.Errorf("a.1: %q", got)
	}
	if got := e.Refused("b.1"); !slices.Equal(got, []string{"one"}) {
		t.Errorf("b.1: %q", got)
	}
}
