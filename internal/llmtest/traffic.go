package llmtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TrafficEnv points the replay tests at the recorded provider traffic
// elsewhere than ../shared/provider-traffic beside the clone.
const TrafficEnv = "CODEAGENT_PROVIDER_TRAFFIC"

// TrafficDir is the folder of recorded provider traffic the replays read:
// other projects' recordings, kept outside this repository with their
// licences and notices. The folder named by CODEAGENT_PROVIDER_TRAFFIC
// must exist (a wrong path is a mistake, not a reason to skip); without it
// the test skips, naming the reason, only when ../shared/provider-traffic
// is absent (a clone outside this project's CI).
func TrafficDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(TrafficEnv); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s=%s: %v: point it at the provider-traffic folder, or unset it", TrafficEnv, dir, err)
		}
		return dir
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "provider-traffic")
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("recorded provider traffic not found: no %s (the replays read ../shared/provider-traffic beside the clone, or the folder %s names)", dir, TrafficEnv)
	} else if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Recording is the path of one recording under TrafficDir, which must be
// there once the folder is.
func Recording(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(TrafficDir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("recording %s: %v (the provider-traffic folder is incomplete)", rel, err)
	}
	return p
}

// Cassette is a go-vcr v2 recording, the fields the replays read.
type Cassette struct {
	Interactions []struct {
		Request struct {
			Body string `yaml:"body"`
			URL  string `yaml:"url"`
		} `yaml:"request"`
		Response struct {
			Body    string              `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Code    int                 `yaml:"code"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
