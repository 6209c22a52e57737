package cmdutil

import (
	"math"
	"runtime/debug"
)

// DefaultMemoryLimit is the Go heap's soft limit in both binaries. With
// the default GOGC a heap grows to twice its live data before a collection:
// a cold repo map of the Go standard library (~30 MB live) would peak past
// 80 MB. Under the limit the collector runs earlier instead, so both
// binaries stay near 50–60 MB there; past it (a much larger repository)
// the runtime caps the collector's CPU share rather than failing.
const DefaultMemoryLimit = 48 << 20

// LimitMemory applies DefaultMemoryLimit unless GOMEMLIMIT (read by the Go
// runtime itself) already set a limit.
func LimitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(DefaultMemoryLimit)
}
