package repomap

import (
	"path"
	"strings"
)

// The map's policy on top of the walk (which lists the repository's
// non-ignored source files): code a reader of the map wants to learn about
// is the code the project ships. Tests, their fixtures, vendored copies and
// directories the Go tool itself ignores ("_foo", ".foo") are left out
// unless Options.IncludeTests asks for tests: they refer to everything
// (every test of package p credits p's symbols twice over) and would
// otherwise take a large share of the budget.

// policyDir reports whether the map leaves out directory name (a path
// segment; parent is its directory's slash path, "" at the root).
func policyDir(parent, name string, includeTests bool) bool {
	if testDir(parent, name) {
		return !includeTests
	}
	return strings.HasPrefix(name, "_")
}

// testDir recognises directories of tests and test fixtures.
func testDir(parent, name string) bool {
	switch name {
	case "testdata", "__tests__", "tests":
		return true
	case "test":
		// Maven/Gradle keep tests in src/test; elsewhere "test" may be code.
		return path.Base(parent) == "src"
	}
	return false
}

// policyFile reports whether the map leaves out the file called name.
func policyFile(name string, includeTests bool) bool {
	return !includeTests && isTestFile(name)
}

// isTestFile recognises test files by each language's naming convention.
func isTestFile(name string) bool {
	stem, ext := name, path.Ext(name)
	stem = strings.TrimSuffix(stem, ext)
	switch ext {
	case ".go":
		return strings.HasSuffix(stem, "_test")
	case ".py", ".pyi":
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "conftest"
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		inner := path.Ext(stem)
		return inner == ".test" || inner == ".spec"
	case ".java", ".kt":
		return strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasSuffix(stem, "IT")
	case ".c", ".cc", ".cpp", ".cxx", ".rs":
		return strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "_tests")
	}
	return false
}
