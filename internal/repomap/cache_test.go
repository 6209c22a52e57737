package repomap

import (
	"os"
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
