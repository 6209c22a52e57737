package repomap

import (
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The benchmarks map the Go standard library ($GOROOT/src, ~5000 files
// without tests): cold (empty cache: walk, parse everything, rank, write the
// cache), warm (unchanged tree: stat every file, load the cache, reuse the
// rank) and warm with a new boost each time (load the cached graph and
// re-run the personalised PageRank; nothing is parsed or written).
// Goals on a 2-core machine: cold < 10 s, warm < 100 ms, a new boost
// within 2× of warm, peak RSS under 100 MB.

func goroot(b *testing.B) string {
	b.Helper()
	src := filepath.Join(runtime.GOROOT(), "src") //nolint:staticcheck // SA1019: the standard library of the toolchain running the test is what it maps
	if _, err := os.Stat(src); err != nil {
		b.Fatalf("GOROOT/src is needed for this benchmark: %v", err)
	}
	return src
}

func BenchmarkGoStdlibCold(b *testing.B) {
	root := goroot(b)
	resetPeakMemory()
	var files int
	for b.Loop() {
		m, err := Build(b.Context(), Options{Root: root, CacheDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		files = len(m.Files)
	}
	b.ReportMetric(float64(files), "files")
	reportPeakMemory(b)
}

func BenchmarkGoStdlibWarm(b *testing.B) {
	root := goroot(b)
	dir := b.TempDir()
	if _, err := Build(b.Context(), Options{Root: root, CacheDir: dir}); err != nil {
		b.Fatal(err)
	}
	debug.FreeOSMemory() // so the peak below is the warm runs', not the cold build's
	resetPeakMemory()
	var parsed atomic.Int64
	for b.Loop() {
		_, err := Build(b.Context(), Options{Root: root, CacheDir: dir, onParse: func(string) { parsed.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
	}
	if n := parsed.Load(); n != 0 {
		b.Fatalf("warm runs parsed %d files, want 0", n)
	}
	reportPeakMemory(b)
}

func BenchmarkGoStdlibWarmNewBoost(b *testing.B) {
	root := goroot(b)
	dir := b.TempDir()
	m, err := Build(b.Context(), Options{Root: root, CacheDir: dir, Tokens: -1})
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, len(m.Files))
	for i, f := range m.Files {
		paths[i] = f.Path
	}
	m = nil
	cache := cachePath(dir, root, false)
	before, err := os.Stat(cache)
	if err != nil {
		b.Fatal(err)
	}
	debug.FreeOSMemory()
	resetPeakMemory()
	var parsed atomic.Int64
	i := 0
	for b.Loop() {
		// Each task boosts its own files and goal: a boost never seen before.
		f := paths[(i*7919)%len(paths)]
		i++
		_, err := Build(b.Context(), Options{Root: root, CacheDir: dir, Boost: []string{f, "fix the bug in " + path.Base(path.Dir(f))},
			onParse: func(string) { parsed.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
	}
	if n := parsed.Load(); n != 0 {
		b.Fatalf("warm runs parsed %d files, want 0", n)
	}
	if after, err := os.Stat(cache); err != nil || !after.ModTime().Equal(before.ModTime()) {
		b.Fatalf("a boost rewrote the cache (%v)", err)
	}
	reportPeakMemory(b)
}

// BenchmarkGoStdlibCopy maps a checkout of the standard library at a path
// of its own (as each attempt works in its own copy) with the cache an
// earlier copy left under the attempts' shared key: git's index vouches
// for every file, so nothing is parsed. With a cache per path, as before
// the key, every copy's map was a cold one (BenchmarkGoStdlibCold).
func BenchmarkGoStdlibCopy(b *testing.B) {
	src := goroot(b)
	repo := filepath.Join(b.TempDir(), "repo")
	gitRun(b, b.TempDir(), "init", "-q", repo)
	gitRun(b, repo, "--work-tree", src, "add", "-A")
	gitRun(b, repo, "commit", "-q", "-m", "the standard library")
	dir := b.TempDir()
	if _, err := Build(b.Context(), Options{Root: checkout(b, repo), CacheDir: dir, CacheKey: "attempts"}); err != nil {
		b.Fatal(err)
	}
	copy2 := checkout(b, repo)
	debug.FreeOSMemory()
	resetPeakMemory()
	var parsed atomic.Int64
	var files int
	for b.Loop() {
		m, err := Build(b.Context(), Options{Root: copy2, CacheDir: dir, CacheKey: "attempts", onParse: func(string) { parsed.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
		files = len(m.Files)
	}
	if n := parsed.Load(); n != 0 {
		b.Fatalf("a copy parsed %d files, want 0", n)
	}
	b.ReportMetric(float64(files), "files")
	reportPeakMemory(b)
}

// resetPeakMemory resets the kernel's peak-RSS mark of this process (Linux
// clear_refs "5"), so each benchmark reports its own peak.
func resetPeakMemory() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// reportPeakMemory reports the process's peak resident set (VmHWM) in MB.
func reportPeakMemory(b *testing.B) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
		return
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err == nil {
				b.ReportMetric(float64(kb)/1024, "peak-RSS-MB")
			}
		}
	}
}
