package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmconf"
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string // file content; "-" means pass a --config path that does not exist
		env   map[string]string
		args  []string
		wants []string // substrings of the error
	}{
		{name: "unknown key with line and suggestion", file: "model: m\n\n# comment\nmodle: gpt-4o\n",
			wants: []string{"c.yaml:4: ", `unknown key "modle"`, "known: api_key, base_url", `did you mean "model"?`}},
		{name: "flag name used as file key", file: "volumes: ./v\n",
			wants: []string{"c.yaml:1: ", `unknown key "volumes"`, `did you mean "volumes_dir"?`}},
		{name: "wrong type int with line", file: "model: m\nretries: 2\ncontext_window: big\n",
			wants: []string{`c.yaml:3: key "context_window": want an integer, got "big"`}},
		{name: "float where int wanted", file: "parallel: 1.5\n",
			wants: []string{`c.yaml:1: key "parallel": want an integer, got "1.5"`}},
		{name: "list where value wanted", file: "model:\n  - a\n  - b\n",
			wants: []string{`c.yaml:1: key "model": want a single value, got a list`}},
		{name: "bad duration in file", file: "request_timeout: 90\n",
			wants: []string{`c.yaml:1: key "request_timeout": want a duration such as "90s"`, `got "90"`}},
		{name: "bad runtime in file", file: "\nruntime: podman\n",
			wants: []string{`c.yaml:2: key "runtime": "podman" is not allowed: want "docker", "local" or "kubernetes"`}},
		{name: "threshold above one", file: "compaction_threshold: 1.5\n",
			wants: []string{`c.yaml:1: key "compaction_threshold": 1.5 is not allowed: want a fraction greater than 0 and at most 1`}},
		{name: "threshold zero from env", env: map[string]string{"CODEAGENT_COMPACTION_THRESHOLD": "0"},
			wants: []string{`env CODEAGENT_COMPACTION_THRESHOLD: key "compaction_threshold": 0 is not allowed`}},
		{name: "top level list", file: "- model\n- retries\n",
			wants: []string{"c.yaml:1: the top level must be a mapping of key: value, got a list"}},
		{name: "top level scalar", file: "OPENAI_API_KEY=sk-pasted-secret-9876\n",
			wants: []string{`c.yaml:1: the top level must be a mapping of key: value, got a single value`}},
		{name: "invalid yaml", file: "model: [unclosed\n",
			wants: []string{"c.yaml: not valid YAML: yaml:"}},
		{name: "duplicate key", file: "model: a\nretries: 1\nmodel: b\n",
			wants: []string{`c.yaml:3: key "model": set twice (first at line 1)`}},
		{name: "second document", file: "model: a\n---\nmodel: b\n",
			wants: []string{"c.yaml:2: a second YAML document"}},
		{name: "explicit missing config file", file: "-",
			wants: []string{"missing.yaml: config file not found: check the --config path"}},
		{name: "bad env int", env: map[string]string{"CODEAGENT_MAX_ITERATIONS": "lots"},
			wants: []string{`env CODEAGENT_MAX_ITERATIONS: key "max_iterations": want an integer, got "lots"`}},
		{name: "bad env duration", env: map[string]string{"CODEAGENT_TASK_TIMEOUT": "soon"},
			wants: []string{`env CODEAGENT_TASK_TIMEOUT: key "task_timeout": want a duration`}},
		{name: "bad flag runtime", args: []string{"--runtime", "vm"},
			wants: []string{`flag --runtime: key "runtime": "vm" is not allowed: want "docker", "local" or "kubernetes"`}},
		{name: "bad base url from env", env: map[string]string{"OPENAI_BASE_URL": "localhost:8000/v1"},
			wants: []string{`env OPENAI_BASE_URL: key "base_url": "localhost:8000/v1" is not allowed: want an http(s) URL`}},
		{name: "reserved output not below window", file: "context_window: 4096\n",
			wants: []string{`c.yaml:1: key "context_window": 4096 is not allowed: want more than reserved_output (8192, default)`}},
		{name: "reserved output set by flag", file: "context_window: 4096\n", args: []string{"--reserved-output", "5000"},
			wants: []string{`flag --reserved-output: key "reserved_output": 5000 is not allowed: want less than context_window (4096, c.yaml:1)`}},
		{name: "credentials in base url are redacted", env: map[string]string{"OPENAI_BASE_URL": "ftp://user:secret@host/v1"},
			wants: []string{`"ftp://user:xxxxx@host/v1" is not allowed`}},
		{name: "negative parallel", env: map[string]string{"CODEAGENT_PARALLEL": "-1"},
			wants: []string{`env CODEAGENT_PARALLEL: key "parallel": -1 is not allowed: want at least 1`}},
		{name: "attempts out of range", file: "attempts: 9\n",
			wants: []string{`c.yaml:1: key "attempts": 9 is not allowed: want 1 to 8`}},
		{name: "unknown attempt policy", args: []string{"--attempt-policy", "race"},
			wants: []string{`flag --attempt-policy: key "attempt_policy": "race" is not allowed: want "escalate" or "parallel"`}},
		{name: "first_pass_wins not a bool", file: "first_pass_wins: sometimes\n",
			wants: []string{`c.yaml:1: key "first_pass_wins": want true or false, got "sometimes"`}},
		{name: "bad memory", file: "container_memory: lots\n",
			wants: []string{`c.yaml:1: key "container_memory": "lots" is not allowed: want a positive size`}},
		{name: "every problem reported", file: "modle: x\nretries: many\n",
			wants: []string{`unknown key "modle"`, `key "retries": want an integer`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			path := "missing.yaml"
			if tt.file != "-" {
				path = filepath.Base(writeFile(t, dir, "c.yaml", tt.file))
			}
			fs := flags(t, []string{"runtime", "reserved_output", "attempt_policy"}, tt.args...)
			l, err := Load(Options{File: path, Flags: fs, Getenv: env(tt.env)})
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want an error", l.Config)
			}
			t.Logf("error: %v", err)
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			// The secrets of the cases: a pasted key, a URL's password
			// (key names such as kube_secret are no secret).
			if strings.Contains(err.Error(), "pasted-secret") || strings.Contains(err.Error(), ":secret@") {
				t.Errorf("error %q echoes a secret", err)
			}
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Errorf("error %T is not a *config.Error; the CLI maps those to exit 2", err)
			}
		})
	}
}

func TestLoadMissingFileUnwraps(t *testing.T) {
	_, err := Load(Options{File: filepath.Join(t.TempDir(), "nope.yaml"), Getenv: env(nil)})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
}

func TestLoadAcceptsEdgeFiles(t *testing.T) {
	tests := []struct {
		name, file string
		check      func(Config) bool
	}{
		{"empty file", "", func(c Config) bool { return c.Model == "gpt-4o-mini" }},
		{"only comments", "# nothing yet\n", func(c Config) bool { return c.Model == "gpt-4o-mini" }},
		{"bare document marker", "---\n", func(c Config) bool { return c.Model == "gpt-4o-mini" }},
		{"null value keeps default", "summary_model:\nretries: ~\n", func(c Config) bool { return c.Retries == llmconf.DefaultMaxRetries }},
		{"anchor and alias", "model: &m big\nsummary_model: *m\n", func(c Config) bool { return c.SummaryModel == "big" }},
		{"api key in file", "api_key: sk-from-file-abcdef\n", func(c Config) bool { return c.APIKey == "sk-from-file-abcdef" }},
		{"quoted number", "retries: \"3\"\n", func(c Config) bool { return c.Retries == 3 }},
		{"int for float", "container_cpus: 4\n", func(c Config) bool { return c.ContainerCPUs == 4 }},
		{"zero retries allowed", "retries: 0\nmax_retries: 0\nrepo_map_tokens: 0\n", func(c Config) bool { return c.Retries == 0 && c.RepoMapTokens == 0 }},
		{"threshold exactly one", "compaction_threshold: 1\n", func(c Config) bool { return c.CompactionThreshold == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(Options{File: writeFile(t, t.TempDir(), "c.yaml", tt.file), Getenv: env(nil)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.check(l.Config) {
				t.Errorf("unexpected config %+v", l.Config)
			}
		})
	}
}
