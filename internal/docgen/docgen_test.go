package docgen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/config"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "prog", Short: "a program"}
	root.PersistentFlags().String("model", "", "model name")
	run := &cobra.Command{Use: "run", Short: "run it", Run: func(*cobra.Command, []string) {}}
	run.Flags().Int("parallel", 0, "tasks at once")
	root.AddCommand(run)
	return root
}

func TestReferenceWritesPagesAndRemovesStale(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ReferenceDir, "prog_gone.md")
	other := filepath.Join(dir, ReferenceDir, "README.md")
	for _, p := range []string{stale, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Reference(tree(), dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, ReferenceDir, "prog_run.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "--parallel int") || strings.Contains(string(page), "Auto generated") {
		t.Errorf("prog_run.md: want the flag and no date line:\n%s", page)
	}
	if _, err := os.Stat(filepath.Join(dir, ManDir, "prog-run.1")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the page of a command that is gone stays: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a hand-written file in reference/ went: %v", err)
	}
}

func TestCheckNamesWhatIsStale(t *testing.T) {
	docs := t.TempDir()
	gen := func(dir string) error { return Reference(tree(), dir) }
	if err := gen(docs); err != nil {
		t.Fatal(err)
	}
	if err := Check(docs, t.TempDir(), "prog", gen); err != nil {
		t.Fatalf("fresh docs: %v", err)
	}
	if err := os.WriteFile(filepath.Join(docs, ReferenceDir, "prog_run.md"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Check(docs, t.TempDir(), "prog", gen)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "prog_run.md differs") || !strings.Contains(err.Error(), "make docs") {
		t.Errorf("edited page: got %v", err)
	}
}

func TestSettingsTableHasEveryKey(t *testing.T) {
	table := SettingsTable(tree())
	for _, key := range config.Keys() {
		if !strings.Contains(table, "| `"+key+"` |") {
			t.Errorf("no row for %s", key)
		}
	}
	if !strings.Contains(table, "`--model` (every command)") || !strings.Contains(table, "`--parallel` (prog run)") {
		t.Errorf("flags not named with their commands:\n%s", table)
	}
}

func TestSettingsRewritesOnlyTheBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	in := "# Configuration\n\nprose\n\n" + beginSettings + "\nold table\n" + endSettings + "\n\nmore prose\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Settings(tree(), dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	out := string(b)
	if strings.Contains(out, "old table") || !strings.HasPrefix(out, "# Configuration\n\nprose\n\n") || !strings.HasSuffix(out, "\n\nmore prose\n") || !strings.Contains(out, "| `parallel` |") {
		t.Errorf("got:\n%s", out)
	}
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Settings(tree(), dir); err == nil || !strings.Contains(err.Error(), "BEGIN GENERATED") {
		t.Errorf("no markers: got %v", err)
	}
}
