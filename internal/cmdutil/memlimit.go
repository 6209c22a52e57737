package cmdutil

import (
	"math"
	"runtime/debug"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit in both
// binaries. With the default GOGC a heap grows to twice its live data
// before a collection: a cold repo map of the Go standard library (~30 MB
// live) would peak past 80 MB of heap. Under the limit the collector runs
// earlier instead; past it (a much larger repository) the runtime caps the
// collector's CPU share rather than failing. 40 MiB, not 48: planagent's
// binary (then with client-go's whole Clientset, the Docker client, the
// Anthropic SDK) kept ~40 MB of its own file pages resident, and at 48 MiB
// its peak over the standard library passed 100 MB (101–107 MB; 93–107 MB
// at 40 MiB, the run no slower within the noise). Without the Clientset
// its file pages are 28 MB idle and 35–41 MB at that peak, beside ~46 MB
// of anonymous memory under this limit: 76–87 MB.
const DefaultMemoryLimit = 40 << 20

// LimitMemory applies DefaultMemoryLimit unless GOMEMLIMIT (read by the Go
// runtime itself) already set a limit.
func LimitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(DefaultMemoryLimit)
}
