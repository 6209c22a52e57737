package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// The agents can write context/ (issue 36, item 3): a link planted as the
// repo map's cache dir must not have the planner's map written where it
// points. It is replaced by a directory, named in a warning, and the cache
// is written there.
func TestPlannerRepoMapCacheLinkIsNotFollowed(t *testing.T) {
	t.Chdir(t.TempDir())
	volumes := filepath.Join(t.TempDir(), "volumes")
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "t3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "t3", "precious.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"context", "workspace"} {
		if err := os.MkdirAll(filepath.Join(volumes, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(volumes, "workspace", "main.go"), []byte("package main\n\nfunc Hello() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(volumes, "context", ".repomap-cache")
	if err := os.Symlink(outside, cache); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Calls(llmtest.Call("create_plan", `{"title":"T","tasks":[{"id":"a","title":"Do it","description":"do it","dependencies":[]}]}`))
	})
	f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_VOLUMES_DIR": volumes, "CODEAGENT_REPO_MAP_TOKENS": "1024"})
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"plan", "say hello", "--json"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errb)
	}

	var got []string
	_ = filepath.WalkDir(outside, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && p != outside {
			rel, _ := filepath.Rel(outside, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if !slices.Equal(got, []string{"t3", "t3/precious.txt"}) {
		t.Errorf("outside holds %v, want only t3/precious.txt", got)
	}
	if fi, err := os.Lstat(cache); err != nil || !fi.IsDir() {
		t.Fatalf("the cache dir is not a directory: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "repomap-*.bin")); len(files) != 1 {
		t.Errorf("cache files %v, want one", files)
	}
	if !strings.Contains(errb.String(), cache) {
		t.Errorf("no warning names %s:\n%s", cache, errb)
	}
}
