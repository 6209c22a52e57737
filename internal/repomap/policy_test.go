package repomap

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestPolicyLeavesOutTestsUnlessAsked(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":                     "module example.com/m\n",
		"lib/lib.go":                 "package lib\n\nfunc Lib() {}\n",
		"lib/lib_test.go":            "package lib\n\nfunc TestLib() { Lib() }\n",
		"lib/testdata/fixture.go":    "package fixture\n",
		"_tools/gen.go":              "package main\n",
		"app/service.py":             "def serve():\n    pass\n",
		"app/test_service.py":        "from service import serve\n",
		"app/service_test.py":        "x = 1\n",
		"app/conftest.py":            "x = 1\n",
		"tests/integration.py":       "x = 1\n",
		"web/api.ts":                 "export const a = 1\n",
		"web/api.test.ts":            "test('a', () => {})\n",
		"web/__tests__/b.ts":         "export const b = 1\n",
		"java/src/main/A.java":       "class A {}\n",
		"java/src/main/ATest.java":   "class ATest {}\n",
		"java/src/test/B.java":       "class B {}\n",
		"rs/src/test/helper.rs":      "fn helper() {}\n",
		"rs/testing/latest.go":       "package testing\n",
		"contest/entry.go":           "package contest\n",
		"latest_test_results/doc.py": "x = 1\n",
	})
	shipped := []string{"lib/lib.go", "app/service.py", "web/api.ts", "java/src/main/A.java", "rs/testing/latest.go",
		"contest/entry.go", "latest_test_results/doc.py"}
	tests := []string{"lib/lib_test.go", "lib/testdata/fixture.go", "app/test_service.py", "app/service_test.py",
		"app/conftest.py", "tests/integration.py", "web/api.test.ts", "web/__tests__/b.ts", "java/src/main/ATest.java",
		"java/src/test/B.java", "rs/src/test/helper.rs"}

	m := build(t, Options{Root: root})
	for _, p := range shipped {
		if fileOf(m, p) == nil {
			t.Errorf("%s missing from the default map; have %v", p, paths(m))
		}
	}
	for _, p := range append(tests, "_tools/gen.go") {
		if fileOf(m, p) != nil {
			t.Errorf("%s in the default map, want it left out", p)
		}
	}

	all := build(t, Options{Root: root, IncludeTests: true})
	for _, p := range append(shipped, tests...) {
		if fileOf(all, p) == nil {
			t.Errorf("%s missing with IncludeTests; have %v", p, paths(all))
		}
	}
	if fileOf(all, "_tools/gen.go") != nil {
		t.Error("_tools/gen.go mapped with IncludeTests: _ directories are never mapped (the go tool ignores them too)")
	}
}

func TestRankGoQualifiedReferences(t *testing.T) {
	// Three types called Pointer; only unsafe's is used, through its
	// qualifier, and errors.New is used from two packages. A bare name must
	// not credit the other Pointer types, and a method call x.Pointer()
	// must credit only methods.
	root := writeTree(t, map[string]string{
		"go.mod":            "module std\n",
		"unsafe/unsafe.go":  "package unsafe\n\ntype Pointer *int\n",
		"atomic/pointer.go": "package atomic\n\ntype Pointer struct{}\n",
		"other/pointer.go":  "package other\n\ntype Pointer struct{}\n\nfunc (Pointer) Load() {}\n",
		"errors/errors.go":  "package errors\n\nfunc New(s string) error { return nil }\n",
		"news/new.go":       "package news\n\nfunc New() {}\n",
		"a/a.go":            "package a\n\nimport (\n\t\"errors\"\n\t\"unsafe\"\n)\n\nvar p unsafe.Pointer\nvar e = errors.New(\"x\")\n",
		"b/b.go":            "package b\n\nimport \"errors\"\n\nvar e = errors.New(\"y\")\n\nfunc use(x interface{ Load() }) { x.Load() }\n",
		"c/c.go":            "package c\n\nimport u \"unsafe\"\n\nvar q u.Pointer\n",
	})
	m := build(t, Options{Root: root})
	rank := func(path, name string) float64 {
		t.Helper()
		f := fileOf(m, path)
		if f == nil {
			t.Fatalf("%s not mapped", path)
		}
		for _, s := range f.Symbols {
			if s.Name == name {
				return s.Rank
			}
		}
		t.Fatalf("%s has no %s", path, name)
		return 0
	}
	if r := rank("unsafe/unsafe.go", "Pointer"); r <= 0 {
		t.Errorf("unsafe.Pointer rank %v, want > 0 (used as unsafe.Pointer and u.Pointer)", r)
	}
	for _, p := range []string{"atomic/pointer.go", "other/pointer.go"} {
		if r := rank(p, "Pointer"); r != 0 {
			t.Errorf("%s Pointer rank %v, want 0: nothing names it", p, r)
		}
	}
	if r := rank("errors/errors.go", "New"); r <= 0 {
		t.Errorf("errors.New rank %v, want > 0", r)
	}
	if r := rank("news/new.go", "New"); r != 0 {
		t.Errorf("news.New rank %v, want 0: errors.New is not news.New", r)
	}
	if r := rank("other/pointer.go", "Load"); r <= 0 {
		t.Errorf("method Load rank %v, want > 0 (called as x.Load())", r)
	}
	if got := m.Files[0].Path; got != "errors/errors.go" && got != "unsafe/unsafe.go" {
		t.Errorf("first file %s, want errors.go or unsafe.go; order %v", got, paths(m))
	}
}

func TestGoPackageName(t *testing.T) {
	for imp, want := range map[string]string{
		"errors": "errors", "math/rand/v2": "rand", "gopkg.in/yaml.v3": "yaml", "github.com/x/go-openai": "openai",
		"github.com/moby/moby/v2": "moby", "example.com/my-pkg": "my_pkg",
	} {
		if got := goPackageName(imp); got != want {
			t.Errorf("goPackageName(%q) = %q, want %q", imp, got, want)
		}
	}
}

// TestRankGoStdlib maps the real Go standard library: the most used
// package-level function of Go, errors.New, must put errors/errors.go at
// the top, and no test file or testdata may take part of the budget.
func TestRankGoStdlib(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: maps all of GOROOT/src (make test runs it)")
	}
	root := filepath.Join(runtime.GOROOT(), "src") //nolint:staticcheck // SA1019: the standard library of the toolchain running the test is what it maps
	if _, err := os.Stat(filepath.Join(root, "errors", "errors.go")); err != nil {
		t.Fatalf("this test maps GOROOT/src: %v", err)
	}
	m := build(t, Options{Root: root, Tokens: 4096})
	at := -1
	for i, f := range m.Files {
		if f.Path == "errors/errors.go" {
			at = i
		}
		if isTestFile(filepath.Base(f.Path)) || strings.Contains("/"+f.Path, "/testdata/") || strings.Contains("/"+f.Path, "/_") {
			t.Errorf("%s mapped: tests, testdata/ and _ directories are left out", f.Path)
		}
	}
	if at < 0 || at >= 10 {
		t.Errorf("errors/errors.go ranks %d, want in the top 10; top: %v", at+1, paths(m)[:10])
	}
	if !strings.Contains(m.Text, "errors/errors.go:\n  func New(text string) error\n") {
		t.Errorf("the rendered map lacks errors.New:\n%s", m.Text)
	}
	if strings.Contains(m.Text, "_test.go") {
		t.Errorf("the rendered map shows a test file:\n%s", m.Text)
	}
}

// TestBoostPersonalisesCachedGraph: a new boost re-ranks the cached graph
// (nothing parsed, the cache not rewritten) and gives exactly the ranking
// a map built from scratch with that boost gives.
func TestBoostPersonalisesCachedGraph(t *testing.T) {
	root := rankRepo(t)
	cacheDir := t.TempDir()
	var pc parseCounter
	build(t, Options{Root: root, CacheDir: cacheDir})
	file := cachePath(cacheDir, root, false)
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, boost := range [][]string{{"leaf.py"}, {"helpers.py", "rename parse_helper_value"}, nil} {
		warm := build(t, Options{Root: root, CacheDir: cacheDir, Boost: boost, onParse: pc.hook})
		if got := pc.take(); len(got) != 0 {
			t.Errorf("boost %v parsed %v, want nothing (graph cached)", boost, got)
		}
		fresh := build(t, Options{Root: root, Boost: boost})
		if !reflect.DeepEqual(warm.Files, fresh.Files) || warm.Text != fresh.Text {
			t.Errorf("boost %v: cached-graph ranking differs from a fresh one:\nwarm  %+v\nfresh %+v", boost, warm.Files, fresh.Files)
		}
		after, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(before) {
			t.Errorf("boost %v rewrote the cache; it keeps the unboosted ranking", boost)
		}
	}
}
