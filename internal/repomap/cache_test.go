package repomap

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// parseCounter records which files a Build parsed (the rest came from the cache).
type parseCounter struct {
	mu    sync.Mutex
	files []string
}

func (c *parseCounter) hook(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files = append(c.files, rel)
}

func (c *parseCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.files
	c.files = nil
	sort.Strings(out)
	return out
}

func TestCacheInvalidation(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a.py": "def alpha():\n    pass\n",
		"b.py": "from a import alpha\n\ndef beta():\n    alpha()\n",
		"c.go": "package c\n\nfunc Gamma() {}\n",
	})
	cacheDir := t.TempDir()
	var pc parseCounter
	opts := Options{Root: root, CacheDir: cacheDir, onParse: pc.hook}
	later := time.Now().Add(time.Hour)

	steps := []struct {
		name       string
		change     func(t *testing.T)
		wantParsed []string
		check      func(t *testing.T, m *Map)
	}{
		{"cold", func(*testing.T) {}, []string{"a.py", "b.py", "c.go"}, nil},
		{"unchanged", func(*testing.T) {}, nil, func(t *testing.T, m *Map) {
			if len(m.Files) != 3 || fileOf(m, "b.py").Imports[0] != "a.py" {
				t.Errorf("cached map lost files or imports: %+v", m.Files)
			}
		}},
		{"touched", func(t *testing.T) {
			if err := os.Chtimes(filepath.Join(root, "a.py"), later, later); err != nil {
				t.Fatal(err)
			}
		}, []string{"a.py"}, nil},
		{"modified", func(t *testing.T) {
			writeFile(t, root, "c.go", "package c\n\nfunc Gamma() {}\n\nfunc Delta() {}\n")
		}, []string{"c.go"}, func(t *testing.T, m *Map) {
			if syms := fileOf(m, "c.go").Symbols; len(syms) != 2 || syms[1].Name != "Delta" {
				t.Errorf("c.go symbols after the change: %+v", syms)
			}
		}},
		{"added", func(t *testing.T) { writeFile(t, root, "d.py", "X = 1\n") }, []string{"d.py"}, nil},
		{"removed", func(t *testing.T) {
			if err := os.Remove(filepath.Join(root, "d.py")); err != nil {
				t.Fatal(err)
			}
		}, nil, func(t *testing.T, m *Map) {
			if fileOf(m, "d.py") != nil {
				t.Error("removed file still in the map")
			}
		}},
		{"corrupt cache", func(t *testing.T) {
			// A torn write: the first half of a valid cache.
			file := cachePath(cacheDir, root, false)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"a.py", "b.py", "c.go"}, func(t *testing.T, m *Map) {
			if len(m.Warnings) == 0 {
				t.Error("a corrupt cache gave no warning")
			}
		}},
		{"rebuilt after corruption", func(*testing.T) {}, nil, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.change(t)
			m := build(t, opts)
			if got := pc.take(); !equalStrings(got, st.wantParsed) {
				t.Errorf("parsed %v, want %v", got, st.wantParsed)
			}
			if st.check != nil {
				st.check(t, m)
			}
		})
	}
}

func TestCacheKeepsRankPerBoost(t *testing.T) {
	root := rankRepo(t)
	cacheDir := t.TempDir()
	plain := build(t, Options{Root: root, CacheDir: cacheDir})
	boosted := build(t, Options{Root: root, CacheDir: cacheDir, Boost: []string{"leaf.py"}})
	if boosted.Files[0].Path != "leaf.py" {
		t.Fatalf("boost ignored with a warm cache: order %v", paths(boosted))
	}
	again := build(t, Options{Root: root, CacheDir: cacheDir})
	if again.Text != plain.Text || again.Files[0].Path != plain.Files[0].Path {
		t.Errorf("rank not recomputed when the boost went away:\n%s\nwant\n%s", again.Text, plain.Text)
	}
}

func TestCacheWriteFailureIsAWarning(t *testing.T) {
	root := rankRepo(t)
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := build(t, Options{Root: root, CacheDir: filepath.Join(blocker, "cache")})
	if len(m.Files) == 0 || len(m.Warnings) == 0 {
		t.Fatalf("files %d, warnings %v: want a map and a warning", len(m.Files), m.Warnings)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gitRun runs git in dir with a fixed identity and no user or system
// configuration.
func gitRun(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=U", "GIT_COMMITTER_EMAIL=u@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// checkout clones the repository src into a new directory and refreshes
// its index once the clock has moved on, so that git's index vouches for
// every file (none racily clean), as it does for a copy some time after
// it was made.
func checkout(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	gitRun(t, filepath.Dir(dst), "clone", "-q", src, dst)
	idx := filepath.Join(dst, ".git", "index")
	fi, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	for time.Since(fi.ModTime()) < 50*time.Millisecond { // more than a tick of the file clock
		time.Sleep(10 * time.Millisecond)
	}
	gitRun(t, dst, "update-index", "--really-refresh", "-q")
	gitRun(t, dst, "status", "--porcelain") // writes the refreshed index back
	index := readTracked(dst)
	if index == nil || len(index.entries) == 0 {
		t.Fatalf("%s: no index read", dst)
	}
	for rel := range index.entries {
		fi, err := os.Lstat(filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil || index.id(rel, fi) == "" {
			t.Fatalf("%s: the index does not vouch for %s (%v)", dst, rel, err)
		}
	}
	return dst
}

// Copies of one repository at other paths (an attempt's checkout each)
// share one cache file under a key: a copy parses nothing git's index
// vouches for as cached, and maps exactly what a cold build maps; a file
// whose content differs is parsed again even with the cached size and
// mtime, and a file the index does not vouch for is told by its stat.
func TestCacheFollowsContentAcrossCopies(t *testing.T) {
	src := writeTree(t, map[string]string{
		"go.mod":  "module example.com/ex\n",
		"a.go":    "package ex\n\n// Alpha is the first.\nfunc Alpha() {}\n",
		"b/b.go":  "package b\n\nimport \"example.com/ex\"\n\nfunc Bravo() { ex.Alpha() }\n",
		"c/c.py":  "def charlie():\n    pass\n",
		"skip.md": "not mapped\n",
	})
	gitRun(t, src, "init", "-q")
	gitRun(t, src, "add", "-A")
	gitRun(t, src, "commit", "-q", "-m", "one")
	cacheDir := t.TempDir()
	var pc parseCounter
	keyed := func(root string) Options {
		return Options{Root: root, CacheDir: cacheDir, CacheKey: "attempts", onParse: pc.hook}
	}
	build(t, keyed(src))
	if got := pc.take(); len(got) != 3 {
		t.Fatalf("cold build parsed %v, want all three", got)
	}

	copy1 := checkout(t, src)
	m := build(t, keyed(copy1))
	if got := pc.take(); len(got) != 0 {
		t.Errorf("a copy parsed %v; git's index vouches for every file as cached", got)
	}
	cold := build(t, Options{Root: copy1, CacheDir: t.TempDir()})
	if m.Text != cold.Text || len(m.Files) != len(cold.Files) || !equalStrings(fileOf(m, "b/b.go").Imports, fileOf(cold, "b/b.go").Imports) {
		t.Errorf("the copy's map from the cache differs from a cold one:\n%s\nwant\n%s", m.Text, cold.Text)
	}
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 1 {
		t.Errorf("cache dir holds %d files, want the one of the key", len(entries))
	}

	// Same size, the cached mtime, other content: only git's index could
	// tell, and it does not vouch for a file written since.
	copy2 := checkout(t, src)
	old, err := os.Stat(filepath.Join(src, "a.go"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, copy2, "a.go", "package ex\n\n// Omega is the first.\nfunc Omega() {}\n")
	if err := os.Chtimes(filepath.Join(copy2, "a.go"), old.ModTime(), old.ModTime()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, copy2, "c/d.py", "def delta():\n    pass\n") // untracked: no id at all
	m = build(t, keyed(copy2))
	if got := pc.take(); !equalStrings(got, []string{"a.go", "c/d.py"}) {
		t.Errorf("the changed copy parsed %v, want [a.go c/d.py]", got)
	}
	if syms := fileOf(m, "a.go").Symbols; len(syms) != 1 || syms[0].Name != "Omega" {
		t.Errorf("a.go from the changed copy: %+v, want Omega", syms)
	}

	// That build wrote the cache for copy2's root; the first copy still
	// gets its own content back.
	m = build(t, keyed(copy1))
	if got := pc.take(); !equalStrings(got, []string{"a.go"}) {
		t.Errorf("back in the first copy parsed %v, want [a.go] (the cache holds Omega's)", got)
	}
	if syms := fileOf(m, "a.go").Symbols; len(syms) != 1 || syms[0].Name != "Alpha" {
		t.Errorf("a.go back in the first copy: %+v, want Alpha", syms)
	}
}
