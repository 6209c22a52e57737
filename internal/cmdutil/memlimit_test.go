package cmdutil

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestLimitMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	debug.SetMemoryLimit(math.MaxInt64)
	LimitMemory(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Errorf("limit %d, want DefaultMemoryLimit %d", got, DefaultMemoryLimit)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	LimitMemory(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set: limit changed to %d", got)
	}

	debug.SetMemoryLimit(200 << 20) // a limit the runtime already applied
	LimitMemory(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Errorf("an existing limit was replaced by %d", got)
	}
}
