package config

import (
	"strings"
	"testing"
)

// The api setting: auto chooses where certain and says why; flag > env >
// file as for every setting; an unknown value is refused with the choices.
func TestLoadAPI(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tt := range []struct {
		name, file string
		env        map[string]string
		args       []string
		want, key  string
		shown      string // substring of the config display's api row
	}{
		{name: "default is chat", want: "auto", shown: "chat default (auto: the OpenAI-compatible default)"},
		{name: "anthropic host", env: map[string]string{"OPENAI_BASE_URL": "https://api.anthropic.com/v1", "OPENAI_MODEL": "claude-sonnet-4-5",
			"OPENAI_API_KEY": "sk-openai-000000000000", "ANTHROPIC_API_KEY": "sk-ant-111111111111"},
			want: "auto", key: "sk-ant-111111111111", shown: "anthropic default (auto: base_url host is api.anthropic.com)"},
		{name: "codex model", env: map[string]string{"OPENAI_MODEL": "gpt-5.1-codex"}, want: "auto", shown: "responses default (auto: OpenAI serves gpt-5.1-codex only on the Responses API)"},
		{name: "file", file: "api: anthropic\nbase_url: https://proxy.example/v1\n", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-222222222222"},
			want: "anthropic", key: "sk-ant-222222222222", shown: "anthropic"},
		{name: "env over file", file: "api: anthropic\n", env: map[string]string{"CODEAGENT_API": "chat", "ANTHROPIC_API_KEY": "sk-ant-333333333333", "OPENAI_API_KEY": "sk-o"},
			want: "chat", key: "sk-o", shown: "env CODEAGENT_API"},
		{name: "flag over env", env: map[string]string{"CODEAGENT_API": "chat"}, args: []string{"--api=responses"}, want: "responses", shown: "flag --api"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, dir, "c.yaml", tt.file)
			l, err := Load(Options{File: file, Flags: flags(t, []string{"api"}, tt.args...), Getenv: env(tt.env)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if l.API != tt.want || l.APIKey != tt.key {
				t.Errorf("api %q key %q, want %q %q", l.API, l.APIKey, tt.want, tt.key)
			}
			var b strings.Builder
			if err := l.Print(&b); err != nil {
				t.Fatal(err)
			}
			var row string
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(line, "api ") {
					row = strings.Join(strings.Fields(line), " ")
				}
			}
			if !strings.Contains(row, tt.shown) {
				t.Errorf("api row %q lacks %q", row, tt.shown)
			}
			if strings.Contains(b.String(), "111111111111") || strings.Contains(b.String(), "222222222222") {
				t.Error("the key was printed")
			}
		})
	}
	_, err := Load(Options{File: writeFile(t, dir, "c.yaml", "api: gemini\n"), Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "api") || !strings.Contains(err.Error(), `"anthropic"`) {
		t.Errorf("unknown api: %v", err)
	}
}

func TestKeyEnvs(t *testing.T) {
	for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		if !IsKeyEnv(name) {
			t.Errorf("%s is not treated as a key", name)
		}
	}
}
