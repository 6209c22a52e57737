package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"local runtime", func(c *Config) { c.Runtime = "local" }, ""},
		{"empty model", func(c *Config) { c.Model = " " }, `key "model": " " is not allowed: want a model name`},
		{"zero context window", func(c *Config) { c.ContextWindow = 0 }, `key "context_window": 0 is not allowed`},
		{"reserved equals window", func(c *Config) { c.ReservedOutput = c.ContextWindow },
			`key "reserved_output": 128000 is not allowed: want less than context_window (128000, set)`},
		{"zero timeout", func(c *Config) { c.RequestTimeout = 0 }, `key "request_timeout": 0s is not allowed`},
		{"negative retries", func(c *Config) { c.Retries = -1 }, `key "retries": -1 is not allowed: want 0 or more`},
		{"zero cpus", func(c *Config) { c.ContainerCPUs = 0 }, `key "container_cpus": 0 is not allowed`},
		{"zero pids", func(c *Config) { c.ContainerPids = 0 }, `key "container_pids": 0 is not allowed`},
		{"empty image", func(c *Config) { c.Image = "" }, `key "image": "" is not allowed`},
		{"empty network", func(c *Config) { c.Network = "" }, `key "network": "" is not allowed`},
		{"empty volumes", func(c *Config) { c.VolumesDir = "" }, `key "volumes_dir": "" is not allowed`},
		{"negative repo map", func(c *Config) { c.RepoMapTokens = -5 }, `key "repo_map_tokens": -5 is not allowed`},
		{"zero task timeout", func(c *Config) { c.TaskTimeout = 0 }, `key "task_timeout": 0s is not allowed`},
		{"zero keep", func(c *Config) { c.KeepMessages = 0 }, `key "keep_messages": 0 is not allowed`},
		{"zero iterations", func(c *Config) { c.MaxIterations = 0 }, `key "max_iterations": 0 is not allowed`},
		{"negative max retries", func(c *Config) { c.MaxRetries = -1 }, `key "max_retries": -1 is not allowed`},
		{"url without host", func(c *Config) { c.BaseURL = "http:///v1" }, `key "base_url"`},
		{"zero max file size", func(c *Config) { c.MaxFileSize = "0" }, `key "max_file_size": "0" is not allowed: want a positive size`},
		{"max file size in words", func(c *Config) { c.MaxFileSize = "big" }, `key "max_file_size": "big" is not allowed`},
		{"zero max files", func(c *Config) { c.MaxFiles = 0 }, `key "max_files": 0 is not allowed: want at least 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"2g", 2 << 30, false},
		{"512m", 512 << 20, false},
		{"512M", 512 << 20, false},
		{"1.5GiB", 3 << 29, false},
		{"64mb", 64 << 20, false},
		{"1024k", 1 << 20, false},
		{"1048576", 1 << 20, false},
		{"1t", 1 << 40, false},
		{"", 0, true},
		{"0", 0, true},
		{"-1g", 0, true},
		{"lots", 0, true},
		{"1e9", 0, true},
		{"inf", 0, true},
		{"2x", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMemory(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseMemory(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The table in fields.go must cover every Config field exactly once, or a
// setting would silently be unreachable from file, env and flags.
func TestFieldTableCoversConfig(t *testing.T) {
	var c Config
	seen := make(map[uintptr]string)
	for _, f := range fields() {
		p := reflect.ValueOf(f.ptr(&c)).Pointer()
		if other, dup := seen[p]; dup {
			t.Errorf("keys %s and %s point at the same field", other, f.key)
		}
		seen[p] = f.key
		if f.flag == "" || !strings.HasPrefix(f.env, "CODEAGENT_") && !strings.HasPrefix(f.env, "OPENAI_") {
			t.Errorf("key %s: flag %q env %q", f.key, f.flag, f.env)
		}
	}
	// mcp_servers and mcp_read_only are structured and parsed in mcp.go,
	// prices in prices.go, notify in notify.go, compat in compat.go.
	if n := reflect.TypeOf(c).NumField(); len(seen)+5 != n {
		t.Errorf("table has %d keys (+2 MCP keys, prices, notify, compat), Config has %d fields", len(seen), n)
	}
}

// The limits of a task's copy come from the environment like every key,
// the size in docker units.
func TestCopyLimitsFromEnv(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Getenv: env(map[string]string{"CODEAGENT_MAX_FILE_SIZE": "1g", "CODEAGENT_MAX_FILES": "250000"}), Catalog: noCatalog})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.MaxFileBytes(); err != nil || n != 1<<30 || l.MaxFiles != 250_000 {
		t.Errorf("max_file_size %d (%v), max_files %d; want 1 GiB and 250000", n, err, l.MaxFiles)
	}
	if l.Sources["max_file_size"] != "env CODEAGENT_MAX_FILE_SIZE" || l.Sources["max_files"] != "env CODEAGENT_MAX_FILES" {
		t.Errorf("sources %q, %q", l.Sources["max_file_size"], l.Sources["max_files"])
	}
	if d, err := Defaults().MaxFileBytes(); err != nil || d != 100<<20 {
		t.Errorf("default max_file_size = %d (%v), want 100 MiB", d, err)
	}
}
