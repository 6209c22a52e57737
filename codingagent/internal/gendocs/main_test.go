package main

import (
	"path/filepath"
	"testing"

	"github.com/codeagent/codeagent/internal/docgen"
)

// TestDocsCurrent regenerates codingagent's reference (and what else generate
// writes) into a temporary dir and compares it with docs/: a flag, a help
// text or a setting changed without make docs fails here.
func TestDocsCurrent(t *testing.T) {
	docs := filepath.Join("..", "..", "..", "docs")
	if err := docgen.Check(docs, t.TempDir(), "codingagent", generate); err != nil {
		t.Fatal(err)
	}
}
