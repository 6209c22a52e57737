package config

import (
	"testing"

	"github.com/spf13/pflag"
)

// A setting's flag gets its help from the table, ending with its default
// and where else it is read; a kept default replaces both. The flag itself
// defaults to the zero value, so an unset flag leaves the environment, the
// files and the defaults to decide.
func TestAddFlagsHelp(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	if err := AddFlags(fs, "parallel", "api", "kube_context", "budget_time", "setup_command", "api_key", "include_ignored"); err != nil {
		t.Fatal(err)
	}
	kept := pflag.NewFlagSet("kept", pflag.ContinueOnError)
	if err := AddFlagsKept(kept, "as the run was started", "parallel"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fs        *pflag.FlagSet
		name      string
		help, def string
	}{
		{fs, "parallel", "dispatch up to N ready tasks at once (default 1; config parallel, env CODEAGENT_PARALLEL)", "0"},
		{fs, "api", "wire API: auto, chat, anthropic or responses (default auto: anthropic for api.anthropic.com, " +
			"responses for OpenAI's *-codex models, else chat; config api, env CODEAGENT_API)", ""},
		{fs, "context", "kubernetes runtime: kubeconfig context (default: the current context; config kube_context, env CODEAGENT_KUBE_CONTEXT)", ""},
		{fs, "budget-time", "pause the run once it has run this long, e.g. 30m; exit 3 (default: none; config budget_time, env CODEAGENT_BUDGET_TIME)", "0s"},
		{fs, "setup-command", "shell command run in each fresh task copy before the agent starts and before the acceptance commands, " +
			"e.g. \"npm ci\" (config setup_command, env CODEAGENT_SETUP_COMMAND)", ""},
		{fs, "api-key", "API key of the OpenAI-compatible server (config api_key, env OPENAI_API_KEY)", ""},
		{fs, "include-ignored", "an ignored path (gitignore pattern) of the workspace to copy into every task's copy, " +
			"besides .worktreeinclude; repeatable (config include_ignored, env CODEAGENT_INCLUDE_IGNORED)", "[]"},
		{kept, "parallel", "dispatch up to N ready tasks at once (default: as the run was started)", "0"},
	}
	for _, tt := range tests {
		fl := tt.fs.Lookup(tt.name)
		if fl == nil {
			t.Errorf("--%s not defined", tt.name)
			continue
		}
		if fl.Usage != tt.help {
			t.Errorf("--%s help\n got %q\nwant %q", tt.name, fl.Usage, tt.help)
		}
		if fl.DefValue != tt.def {
			t.Errorf("--%s default %q, want %q", tt.name, fl.DefValue, tt.def)
		}
	}
	if err := AddFlagsKept(kept, "x", "parralel"); err == nil {
		t.Error("AddFlagsKept(parralel) = nil, want an error naming the key")
	}
}

// An unset flag does not hide the environment: the flag's zero default is
// not a value.
func TestUnsetFlagLeavesTheEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	fs := flags(t, []string{"parallel", "runtime"}, "--runtime", "local")
	l, err := Load(Options{Flags: fs, Getenv: env(map[string]string{"CODEAGENT_PARALLEL": "3"}), Catalog: noCatalog})
	if err != nil {
		t.Fatal(err)
	}
	if l.Parallel != 3 || l.Sources["parallel"] != "env CODEAGENT_PARALLEL" || l.Runtime != "local" {
		t.Errorf("parallel %d from %q, runtime %q", l.Parallel, l.Sources["parallel"], l.Runtime)
	}
}
