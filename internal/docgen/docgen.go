// Package docgen writes the documentation that is generated from the code:
// the command reference (markdown and man pages, by cobra's doc package)
// and the settings table of docs/configuration.md (from config.Settings),
// so that --help, the config table and the docs never disagree. Each
// program's gendocs command calls it with its own command tree (the trees
// live in internal packages the other program cannot import); `make docs`
// runs both, and each program's cli tests (TestDocsCurrent, where the
// tree is linked anyway) regenerate into a temporary dir and diff.
package docgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/config"
)

// Where the generated files go, relative to the docs dir.
const (
	ReferenceDir = "reference"
	ManDir       = "man"
	ConfigFile   = "configuration.md"
)

// manDate is the date in the man pages' header. It is fixed, not the
// build's, so the pages regenerate byte for byte and a test can diff them;
// move it when the reference is revised for a release.
func manDate() *time.Time {
	d := time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)
	return &d
}

// Reference writes root's command reference into docsDir: one markdown page
// per command under reference/ (root.md, root_sub.md: cobra's names) and
// one man page per command under man/ (root.1, root-sub.1). Pages of
// root's program left from commands that are gone are removed first.
func Reference(root *cobra.Command, docsDir string) error {
	prepare(root)
	md := filepath.Join(docsDir, ReferenceDir)
	man := filepath.Join(docsDir, ManDir)
	for _, dir := range []string{md, man} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("docgen: %w", err)
		}
		if err := removeGenerated(dir, root.Name()); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root, md); err != nil {
		return fmt.Errorf("docgen: markdown reference of %s: %w", root.Name(), err)
	}
	header := &doc.GenManHeader{Section: "1", Date: manDate(), Source: "CodeAgent", Manual: "CodeAgent Manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("docgen: man pages of %s: %w", root.Name(), err)
	}
	return nil
}

// prepare makes the tree what a user's --help shows: cobra adds its
// completion and help commands only when the program executes, so they are
// added here; the "auto generated on <date>" line goes, it would make every
// regeneration a diff.
func prepare(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// Generated reports whether name is one of the files Reference writes for
// the program prog.
func Generated(name, prog string) bool {
	for _, ext := range []string{".md", ".1"} {
		base, ok := strings.CutSuffix(name, ext)
		if ok && (base == prog || strings.HasPrefix(base, prog+"_") || strings.HasPrefix(base, prog+"-")) {
			return true
		}
	}
	return false
}

func removeGenerated(dir, prog string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("docgen: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() && Generated(e.Name(), prog) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("docgen: %w", err)
			}
		}
	}
	return nil
}

// The markers around the generated table in configuration.md; what is
// between them is rewritten, everything else in the file is hand-written.
const (
	beginSettings = "<!-- BEGIN GENERATED: settings (make docs) -->"
	endSettings   = "<!-- END GENERATED: settings -->"
)

// Settings rewrites the settings table in docsDir/configuration.md from
// config.Settings, naming for each flag the commands of root that have it.
func Settings(root *cobra.Command, docsDir string) error {
	path := filepath.Join(docsDir, ConfigFile)
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("docgen: %w", err)
	}
	head, rest, ok := bytes.Cut(old, []byte(beginSettings))
	if !ok {
		return fmt.Errorf("docgen: %s has no line %q: put it (and %q) where the settings table goes", path, beginSettings, endSettings)
	}
	_, tail, ok := bytes.Cut(rest, []byte(endSettings))
	if !ok {
		return fmt.Errorf("docgen: %s has %q but no %q after it", path, beginSettings, endSettings)
	}
	var b bytes.Buffer
	b.Write(head)
	b.WriteString(beginSettings + "\n")
	b.WriteString(SettingsTable(root))
	b.WriteString(endSettings)
	b.Write(tail)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// SettingsTable is the markdown table of every configuration key.
func SettingsTable(root *cobra.Command) string {
	users := flagUsers(root)
	var b strings.Builder
	b.WriteString("| key (YAML) | environment | flag | default | what it sets |\n|---|---|---|---|---|\n")
	for _, s := range config.Settings() {
		flag := ""
		if cmds := users[s.Flag]; s.Flag != "" && len(cmds) > 0 {
			flag = "`--" + s.Flag + "` (" + strings.Join(cmds, ", ") + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Key, code(s.Env), flag, code(cell(s.Default)), cell(s.Usage))
	}
	return b.String()
}

// flagUsers maps a flag name to the commands that take it: "every command"
// for the root's persistent flags, else the commands' paths.
func flagUsers(root *cobra.Command) map[string][]string {
	users := map[string][]string{}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		users[f.Name] = []string{"every command"}
	})
	persistent := func(name string) bool { return root.PersistentFlags().Lookup(name) != nil }
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !persistent(f.Name) {
				users[f.Name] = append(users[f.Name], c.CommandPath())
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, cmds := range users {
		sort.Strings(cmds)
	}
	return users
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// cell keeps a table cell one cell: a | would split it.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// ErrStale is what Check returns when a checked-in file differs from what
// the generator writes now.
var ErrStale = errors.New("the generated docs are stale: run make docs and commit the result")

// Check regenerates with gen into a temporary copy of the docs dir's
// generated files and compares: every file differing, missing or extra is
// named in the error, which wraps ErrStale.
func Check(docsDir, tmp, prog string, gen func(dir string) error) error {
	if err := os.MkdirAll(filepath.Join(tmp, ReferenceDir), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(tmp, ManDir), 0o755); err != nil {
		return err
	}
	if cfg, err := os.ReadFile(filepath.Join(docsDir, ConfigFile)); err == nil {
		if err := os.WriteFile(filepath.Join(tmp, ConfigFile), cfg, 0o644); err != nil {
			return err
		}
	}
	if err := gen(tmp); err != nil {
		return err
	}
	var problems []string
	for _, sub := range []string{ReferenceDir, ManDir} {
		want, err := generatedFiles(filepath.Join(tmp, sub), prog)
		if err != nil {
			return err
		}
		have, err := generatedFiles(filepath.Join(docsDir, sub), prog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for name, body := range want {
			got, ok := have[name]
			switch {
			case !ok:
				problems = append(problems, filepath.Join(sub, name)+" is missing")
			case !bytes.Equal(got, body):
				problems = append(problems, filepath.Join(sub, name)+" differs")
			}
		}
		for name := range have {
			if _, ok := want[name]; !ok {
				problems = append(problems, filepath.Join(sub, name)+" is of no command now")
			}
		}
	}
	if got, err := os.ReadFile(filepath.Join(tmp, ConfigFile)); err == nil {
		old, _ := os.ReadFile(filepath.Join(docsDir, ConfigFile))
		if !bytes.Equal(got, old) {
			problems = append(problems, ConfigFile+"'s settings table differs")
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s", ErrStale, strings.Join(problems, "; "))
	}
	return nil
}

func generatedFiles(dir, prog string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !Generated(e.Name(), prog) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}
