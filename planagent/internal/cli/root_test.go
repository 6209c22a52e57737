package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

func testFactory(env map[string]string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	f := &cmdutil.Factory{
		IO:     cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, IsTerminal: func() bool { return false }},
		Getenv: func(k string) string { return env[k] },
	}
	return f, &out, &errb
}

func TestHelpNeedsNoKey(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"plan", "--help"}, {"status", "--help"}, {"resume", "--help"}, {"runs", "--help"}, {"graph", "--help"}, {"config", "--help"}, {"version", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f, out, errb := testFactory(nil)
			if code := cmdutil.Main(f, NewCmdRoot(f), args); code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			if !strings.Contains(out.String(), "Usage:") {
				t.Errorf("no usage text:\n%s", out)
			}
		})
	}
}

// The top-level help names the settings a first run needs: the key, the
// server and the model.
func TestHelpNamesTheModelSettings(t *testing.T) {
	f, out, errb := testFactory(nil)
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"--help"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, want := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("planagent --help does not name %s:\n%s", want, out)
		}
	}
}

func TestConfigMasksKey(t *testing.T) {
	t.Chdir(t.TempDir())
	f, out, errb := testFactory(map[string]string{"OPENAI_API_KEY": "sk-secret-value-1234", "OPENAI_MODEL": "m1"})
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"config", "--base-url", "http://localhost:9/v1"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	s := out.String()
	if strings.Contains(s, "sk-secret-value-1234") {
		t.Fatalf("config printed the key:\n%s", s)
	}
	for _, want := range []string{"env OPENAI_MODEL", "flag --base-url", "1234"} {
		if !strings.Contains(s, want) {
			t.Errorf("config output lacks %q:\n%s", want, s)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"run"}, {"run", "  "}, {"plan", ""}, {"run", "goal", "--runtime", "vm"}, {"status", "no-such-run"}, {"graph", "no-such-run"}, {"graph", "--format", "svg"}, {"resume"}, {"bogus"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f, _, errb := testFactory(nil)
			if code := cmdutil.Main(f, NewCmdRoot(f), args); code != cmdutil.ExitUsage {
				t.Fatalf("exit %d, want 2: %s", code, errb)
			}
			if errb.Len() == 0 {
				t.Errorf("no error message")
			}
		})
	}
}
