package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/volume"
)

type repomapOptions struct {
	path    string
	tokens  int
	json    bool
	boost   []string
	noCache bool
	tests   bool
}

// NewCmdRepomap builds `codingagent repomap`.
func NewCmdRepomap(f *cmdutil.Factory) *cobra.Command {
	opts := &repomapOptions{}
	cmd := &cobra.Command{
		Use:   "repomap [PATH]",
		Short: "Print a ranked map of the code in PATH (default: the workspace, else .)",
		Long: `Print the repo map the agents see: the source files of PATH ranked by how much
the rest of the code refers to them, each with the signatures of its most
important symbols, within a token budget (≈ characters/4). Languages: Go,
Python, JavaScript/TypeScript, Java, Rust, C/C++; files ignored by .gitignore,
vendored and generated files, and directories starting with _ or . are left
out, and so are tests and testdata/ unless --tests asks for them.

Parsed files are cached in <volumes>/context/.repomap-cache when that
context dir exists, so a second map of an unchanged tree is fast.

Without PATH it maps the workspace (--workspace, else <volumes>/workspace),
and the current directory when neither exists.

--json prints every ranked file with all its symbols (kind, name, signature,
doc, lines, rank) and resolved imports, plus the rendered text.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.path = args[0]
			}
			return runRepomap(cmd, f, opts)
		},
	}
	cmd.Flags().IntVar(&opts.tokens, "tokens", 0, "token budget of the map (default: repo_map_tokens from the config, else 1024)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the map as JSON")
	cmd.Flags().StringArrayVar(&opts.boost, "boost", nil, "rank the files and identifiers this text names higher, e.g. a goal (repeatable)")
	cmd.Flags().BoolVar(&opts.noCache, "no-cache", false, "neither read nor write the cache")
	cmd.Flags().BoolVar(&opts.tests, "tests", false, "map test files and testdata/ too")
	return cmd
}

func runRepomap(cmd *cobra.Command, f *cmdutil.Factory, opts *repomapOptions) error {
	if cmd.Flags().Changed("tokens") && opts.tokens <= 0 {
		return cmdutil.UsageError(fmt.Errorf("--tokens %d: give a positive token budget, e.g. --tokens 2048", opts.tokens))
	}
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	layout, err := volume.New(l.VolumesDir, l.WorkspaceDir)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	root := opts.path
	if root == "" {
		root = layout.Workspace()
		if fi, err := os.Stat(root); l.WorkspaceDir == "" && (err != nil || !fi.IsDir()) {
			// Run inside a project that has no volumes tree: the project.
			root = "."
		}
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return cmdutil.UsageError(fmt.Errorf("repomap: %s is not a directory: give the project directory to map (or set --workspace)", root))
	}
	tokens := opts.tokens
	if tokens == 0 {
		// repo_map_tokens: 0 turns the map off in prompts; asked for
		// explicitly, the map is printed at the default size.
		tokens = l.RepoMapTokens
		if tokens <= 0 {
			tokens = repomap.DefaultTokens
		}
	}
	cacheDir := ""
	if fi, err := os.Stat(layout.Context()); !opts.noCache && err == nil && fi.IsDir() {
		cacheDir = filepath.Join(layout.Context(), ".repomap-cache")
	}
	m, err := repomap.Build(cmd.Context(), repomap.Options{Root: root, CacheDir: cacheDir, Tokens: tokens, Boost: opts.boost,
		IncludeTests: opts.tests})
	if err != nil {
		if cmd.Context().Err() != nil || errors.Is(err, cmd.Context().Err()) {
			return err
		}
		return cmdutil.Failed(err)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(f.IO.Err, "warning: %s\n", w)
	}
	if opts.json {
		return jsonout.Write(f.IO.Out, m)
	}
	if m.Text == "" {
		fmt.Fprintf(f.IO.Err, "no source files to map in %s\n", root)
		return nil
	}
	_, err = fmt.Fprint(f.IO.Out, m.Text)
	return err
}
