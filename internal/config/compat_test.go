package config

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestCompat(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "codeagent.yaml", "base_url: https://api.deepseek.com\ncompat:\n  reasoning: none\n  stream_options: false\n")
	l, err := Load(Options{File: file, Getenv: env(nil), UserFile: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"reasoning": "none", "stream_options": "false"}; !reflect.DeepEqual(l.Compat, want) {
		t.Fatalf("Compat = %v, want %v", l.Compat, want)
	}
	if src := string(l.Sources["compat"]); !strings.Contains(src, "codeagent.yaml:2") {
		t.Errorf("compat source %q, want the file line", src)
	}
	p, _, err := l.Profile()
	if err != nil || p.Name != "deepseek" || p.Reasoning != "none" || p.StreamOptions {
		t.Errorf("profile %+v (%v): want deepseek with reasoning none, no stream_options", p, err)
	}

	// config output names the profile, why, and which fields compat set.
	var buf bytes.Buffer
	if err := l.Print(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"profile deepseek (base_url host api.deepseek.com)", "reasoning                none        compat, file", "token_field              max_tokens  profile deepseek"} {
		if !strings.Contains(out, want) {
			t.Errorf("Print lacks %q:\n%s", want, out)
		}
	}

	// It travels to a coding agent in its environment.
	agentEnv := AgentEnv(&l.Config)
	back, err := Load(Options{Getenv: env(agentEnv), UserFile: "/nonexistent", File: writeFile(t, dir, "empty.yaml", "")})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Compat, l.Compat) || back.Sources["compat"] != "env "+EnvCompat {
		t.Errorf("through AgentEnv: %v from %s, want %v from env", back.Compat, back.Sources["compat"], l.Compat)
	}
}

func TestCompatErrors(t *testing.T) {
	tests := []struct{ yaml, env, want string }{
		{yaml: "compat:\n  reasoning: maybe\n", want: `compat key reasoning: want one of none, reasoning_content, openrouter, echo, got "maybe"`},
		{yaml: "compat:\n  thinking: true\n", want: `unknown compat key "thinking"`},
		{yaml: "compat:\n  profile: acme\n", want: `unknown profile "acme"`},
		{yaml: "compat: yes\n", want: "want a mapping of compat key to value"},
		{env: "reasoning", want: "want key=value pairs"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "codeagent.yaml", tt.yaml)
			_, err := Load(Options{File: file, Getenv: env(map[string]string{EnvCompat: tt.env}), UserFile: "/nonexistent"})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "compat") {
				t.Fatalf("err = %v, want one naming compat and %q", err, tt.want)
			}
		})
	}
}
