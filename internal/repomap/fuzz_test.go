package repomap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets feed arbitrary bytes to each family of extractors and
// check that they never panic (a recovered panic is errExtractor) and that
// every symbol has a name and a sane line range.

func addSeeds(f *testing.F, exts ...string) {
	f.Helper()
	for _, ext := range exts {
		files, _ := filepath.Glob("testdata/parse/*" + ext)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte(""))
	f.Add([]byte("{{{{(((["))
	f.Add([]byte("}}}])))"))
}

func checkParse(t *testing.T, name string, src []byte) {
	syms, _, err := ParseFile(name, src)
	if errors.Is(err, errExtractor) {
		t.Fatalf("%s extractor panicked: %v", name, err)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lines := strings.Count(string(src), "\n") + 1
	for _, s := range syms {
		if s.Name == "" || s.Kind == "" {
			t.Errorf("%s: symbol without name or kind: %+v", name, s)
		}
		if s.StartLine < 1 || s.EndLine < s.StartLine || s.EndLine > lines {
			t.Errorf("%s: bad line range %d-%d (file has %d lines): %+v", name, s.StartLine, s.EndLine, lines, s)
		}
	}
}

func FuzzParseGo(f *testing.F) {
	addSeeds(f, ".go")
	f.Fuzz(func(t *testing.T, src []byte) { checkParse(t, "x.go", src) })
}

func FuzzParsePython(f *testing.F) {
	addSeeds(f, ".py")
	f.Fuzz(func(t *testing.T, src []byte) { checkParse(t, "x.py", src) })
}

// FuzzParseCLike runs every input through all languages of the C family,
// which share the tokenizer.
func FuzzParseCLike(f *testing.F) {
	addSeeds(f, ".ts", ".jsx", ".java", ".rs", ".c", ".cpp")
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, name := range []string{"x.js", "x.ts", "x.java", "x.rs", "x.c", "x.cpp"} {
			checkParse(t, name, src)
		}
	})
}
