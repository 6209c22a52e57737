package cli

import (
	"path/filepath"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/docgen"
)

// TestDocsCurrent regenerates what make docs writes for planagent (the
// command reference and configuration.md's settings table, as gendocs'
// generate does) into a temporary dir and compares it with docs/: a flag, a
// help text or a setting changed without make docs fails here. It lives in
// this package's tests, which link the command tree anyway, rather than in
// gendocs' own: a test binary of gendocs would link the whole CLI a second
// time in every go test run.
func TestDocsCurrent(t *testing.T) {
	generate := func(dir string) error {
		if err := docgen.Reference(NewCmdRoot(cmdutil.NewFactory()), dir); err != nil {
			return err
		}
		return docgen.Settings(NewCmdRoot(cmdutil.NewFactory()), dir)
	}
	docs := filepath.Join("..", "..", "..", "docs")
	if err := docgen.Check(docs, t.TempDir(), "planagent", generate); err != nil {
		t.Fatal(err)
	}
}
