// Command gendocs writes codingagent's command reference into the docs dir
// given (make docs: docs).
package main

import (
	"fmt"
	"os"

	"github.com/codeagent/codeagent/codingagent/internal/cli"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/docgen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DOCS_DIR (make docs runs it with docs)")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// generate writes the reference; the cli package's TestDocsCurrent writes
// the same and diffs it with docs/.
func generate(dir string) error {
	return docgen.Reference(cli.NewCmdRoot(cmdutil.NewFactory()), dir)
}
