package repomap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A map holds what it extracted, not the sources it was cut from: the
// lexed languages slice names and doc lines out of the file's text, and a
// Go doc line comes out of its whole comment. Kept as slices, every file's
// source would stay in memory for as long as the map does.
func TestMapDoesNotKeepTheSources(t *testing.T) {
	const files, size = 16, 512 << 10 // under the 1 MiB a mapped file may have
	tree := map[string]string{"go.mod": "module example.com/m\n"}
	line := strings.Repeat("words ", 100) + "\n"
	for i := range files {
		pad := strings.Repeat("# "+line, size/len(line)/2)
		tree[fmt.Sprintf("py/m%02d.py", i)] = pad + fmt.Sprintf("def kept%02d():\n    \"\"\"Doc line.\"\"\"\n    return 1\n", i)
		doc := strings.Repeat("// "+line, size/len(line)/2)
		tree[fmt.Sprintf("g%02d/g.go", i)] = fmt.Sprintf("package g%02d\n\n// Big%02d is documented at length.\n//\n%sfunc Big%02d() {}\n", i, i, doc, i)
	}
	root := writeTree(t, tree)
	opts := Options{Root: root, Tokens: 4096}
	// Warm up what Build allocates once (the walker, the parser's tables).
	if _, err := Build(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := Build(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if !strings.Contains(m.Text, "kept00") || !strings.Contains(m.Text, "Big00") {
		t.Fatalf("the map lost the symbols:\n%s", m.Text)
	}
	total := int64(2 * files * size)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > total/8 {
		t.Errorf("a map of %d MB of sources keeps %d MB live: it holds on to them", total>>20, grown>>20)
	}
	runtime.KeepAlive(m)
}
