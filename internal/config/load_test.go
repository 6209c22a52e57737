package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/llmconf"
)

// env turns a map into an injectable Getenv.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return p
}

// flags builds a set with the given keys' flags and parses args into it.
func flags(t *testing.T, keys []string, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	if err := AddFlags(fs, keys...); err != nil {
		t.Fatalf("AddFlags: %v", err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return fs
}

func TestLoadDefaults(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./codeagent.yaml here
	l, err := Load(Options{Getenv: env(nil), Catalog: noCatalog})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", API: "auto",
		ContextWindow: 128000, ReservedOutput: 8192, CompactionThreshold: 0.9, KeepMessages: 10,
		RequestTimeout: 10 * time.Minute, Retries: llmconf.DefaultMaxRetries, MaxIterations: 100, VolumesDir: "./volumes",
		Runtime: "docker", Image: "codeagent/codingagent:latest", ContainerMemory: "2g",
		ContainerCPUs: 2, ContainerPids: 512, Network: "bridge", RepoMapTokens: 1024,
		TaskTimeout: 30 * time.Minute, MaxFileSize: "100m", MaxFiles: 100_000, Parallel: 1, MaxRetries: 1,
		Attempts: 1, AttemptPolicy: "escalate",
		KubeCPURequest: 0.1, KubeMemoryRequest: "128m", KubePendingTimeout: 3 * time.Minute,
	}
	if !reflect.DeepEqual(l.Config, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", l.Config, want)
	}
	if l.File != "" {
		t.Errorf("File = %q, want empty when ./codeagent.yaml is absent", l.File)
	}
	if len(l.Sources) != len(Keys()) {
		t.Errorf("Sources has %d keys, want %d", len(l.Sources), len(Keys()))
	}
	for _, k := range Keys() {
		if l.Sources[k] != SourceDefault {
			t.Errorf("Sources[%s] = %q, want default", k, l.Sources[k])
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.yaml", "# settings\nmodel: file-model\nretries: 7\nrequest_timeout: 90s\nruntime: local\n")
	allFlags := []string{"model", "retries", "runtime"}

	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		key        string
		get        func(Config) any
		want       any
		wantSource Source
	}{
		{"file overrides default", nil, nil, "request_timeout",
			func(c Config) any { return c.RequestTimeout }, 90 * time.Second, Source("file (" + file + ":4)")},
		{"file line of model", nil, nil, "model",
			func(c Config) any { return c.Model }, "file-model", Source("file (" + file + ":2)")},
		{"env overrides file", map[string]string{"OPENAI_MODEL": "env-model"}, nil, "model",
			func(c Config) any { return c.Model }, "env-model", "env OPENAI_MODEL"},
		{"codeagent env overrides file", map[string]string{"CODEAGENT_RETRIES": "2"}, nil, "retries",
			func(c Config) any { return c.Retries }, 2, "env CODEAGENT_RETRIES"},
		{"flag overrides env", map[string]string{"OPENAI_MODEL": "env-model"}, []string{"--model", "flag-model"}, "model",
			func(c Config) any { return c.Model }, "flag-model", "flag --model"},
		{"unchanged flag does not override env", map[string]string{"CODEAGENT_RETRIES": "2"}, []string{"--model", "m"}, "retries",
			func(c Config) any { return c.Retries }, 2, "env CODEAGENT_RETRIES"},
		{"flag set to its default still counts", map[string]string{"CODEAGENT_RUNTIME": "local"}, []string{"--runtime=docker"}, "runtime",
			func(c Config) any { return c.Runtime }, "docker", "flag --runtime"},
		{"untouched key stays default", nil, nil, "parallel",
			func(c Config) any { return c.Parallel }, 1, SourceDefault},
		{"env base url", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, nil, "base_url",
			func(c Config) any { return c.BaseURL }, "http://localhost:11434/v1", "env OPENAI_BASE_URL"},
		{"env api key", map[string]string{"OPENAI_API_KEY": "sk-abc"}, nil, "api_key",
			func(c Config) any { return c.APIKey }, "sk-abc", "env OPENAI_API_KEY"},
		{"env duration", map[string]string{"CODEAGENT_TASK_TIMEOUT": "1h30m"}, nil, "task_timeout",
			func(c Config) any { return c.TaskTimeout }, 90 * time.Minute, "env CODEAGENT_TASK_TIMEOUT"},
		{"env float", map[string]string{"CODEAGENT_COMPACTION_THRESHOLD": "0.75"}, nil, "compaction_threshold",
			func(c Config) any { return c.CompactionThreshold }, 0.75, "env CODEAGENT_COMPACTION_THRESHOLD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(Options{File: file, Flags: flags(t, allFlags, tt.args...), Getenv: env(tt.env)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.get(l.Config); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %v, want %v", tt.key, got, tt.want)
			}
			if got := l.Sources[tt.key]; got != tt.wantSource {
				t.Errorf("Sources[%s] = %q, want %q", tt.key, got, tt.wantSource)
			}
			if l.File != file {
				t.Errorf("File = %q, want %q", l.File, file)
			}
		})
	}
}

func TestLoadDefaultFileInWorkingDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, DefaultFile, "model: from-default-file\n")
	l, err := Load(Options{Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	abs := filepath.Join(dir, DefaultFile)
	if l.Model != "from-default-file" || l.File != abs {
		t.Errorf("got model %q file %q, want from-default-file and %s", l.Model, l.File, abs)
	}
	if want := Source("file (" + abs + ":1)"); l.Sources["model"] != want {
		t.Errorf("source = %q, want %q", l.Sources["model"], want)
	}
}

func TestLoadVolumesWorkspaceFlags(t *testing.T) {
	keys := []string{"volumes_dir", "workspace_dir", "max_iterations", "base_url"}
	fs := flags(t, keys, "--volumes", "/data/vols", "--workspace", "/src/project", "--max-iterations", "5")
	for _, name := range []string{"volumes", "workspace", "max-iterations", "base-url"} {
		if fs.Lookup(name) == nil {
			t.Errorf("AddFlags did not define --%s", name)
		}
	}
	for _, wrong := range []string{"volumes-dir", "workspace-dir"} {
		if fs.Lookup(wrong) != nil {
			t.Errorf("AddFlags defined --%s; the flag is named without -dir", wrong)
		}
	}
	l, err := Load(Options{File: writeFile(t, t.TempDir(), "c.yaml", ""), Flags: fs, Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	checks := []struct {
		key, got, want string
		source         Source
	}{
		{"volumes_dir", l.VolumesDir, "/data/vols", "flag --volumes"},
		{"workspace_dir", l.WorkspaceDir, "/src/project", "flag --workspace"},
	}
	for _, c := range checks {
		t.Run(c.key, func(t *testing.T) {
			if c.got != c.want || l.Sources[c.key] != c.source {
				t.Errorf("%s = %q from %q, want %q from %q", c.key, c.got, l.Sources[c.key], c.want, c.source)
			}
		})
	}
	if l.MaxIterations != 5 {
		t.Errorf("max_iterations = %d, want 5", l.MaxIterations)
	}
}

// A caller may define its own flags (any type) instead of using AddFlags.
func TestLoadCallerDefinedFlags(t *testing.T) {
	fs := pflag.NewFlagSet("own", pflag.ContinueOnError)
	fs.String("volumes", "./volumes", "")
	fs.Duration("request-timeout", time.Minute, "")
	fs.Bool("json", false, "unrelated flag")
	if err := fs.Parse([]string{"--volumes=rel/v", "--request-timeout=2m30s", "--json"}); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{File: writeFile(t, t.TempDir(), "c.yaml", ""), Flags: fs, Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if l.VolumesDir != "rel/v" || l.RequestTimeout != 150*time.Second {
		t.Errorf("got volumes %q timeout %v, want rel/v and 2m30s", l.VolumesDir, l.RequestTimeout)
	}
}

func TestLoadFilePathsRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.yaml", "volumes_dir: vols\nworkspace_dir: /abs/ws\n")
	l, err := Load(Options{File: file, Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := filepath.Join(dir, "vols"); l.VolumesDir != want {
		t.Errorf("volumes_dir = %q, want %q (relative to the file)", l.VolumesDir, want)
	}
	if l.WorkspaceDir != "/abs/ws" {
		t.Errorf("workspace_dir = %q, want /abs/ws unchanged", l.WorkspaceDir)
	}
}

func TestLoadWarnsAboutIgnoredEnv(t *testing.T) {
	l, err := Load(Options{File: writeFile(t, t.TempDir(), "c.yaml", ""),
		Getenv: env(map[string]string{"CODEAGENT_MODEL": "x", "CODEAGENT_API_KEY": "sk-secret-value-1234"})})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	joined := strings.Join(l.Warnings, "\n")
	for _, want := range []string{"CODEAGENT_MODEL is ignored: use OPENAI_MODEL", "CODEAGENT_API_KEY is ignored: use OPENAI_API_KEY"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
	if strings.Contains(joined, "sk-secret") {
		t.Errorf("warnings leak the key: %q", joined)
	}
	if l.Model != "gpt-4o-mini" || l.APIKey != "" {
		t.Errorf("ignored env vars were used: model %q key set %v", l.Model, l.APIKey != "")
	}
}

func TestKeysMatchesYAMLKeys(t *testing.T) {
	want := []string{"api_key", "base_url", "model", "api", "reasoning_effort", "thinking_budget", "summary_model", "context_window", "reserved_output",
		"compaction_threshold", "keep_messages", "request_timeout", "retries", "max_iterations", "volumes_dir",
		"workspace_dir", "runtime", "image", "container_memory", "container_cpus", "container_pids", "network", "egress", "egress_hosts",
		"kube_namespace", "kubeconfig", "kube_context", "kube_secret", "kube_gateway", "kube_node_selector", "kube_tolerations",
		"kube_cpu_request", "kube_memory_request", "kube_pending_timeout",
		"repo_map_tokens", "task_timeout", "include_ignored", "setup_command", "max_file_size", "max_files", "parallel", "max_retries",
		"attempts", "attempt_policy", "first_pass_wins", "judge", "budget_tokens", "budget_time", "budget_usd",
		"task_budget_tokens", "mcp_servers", "mcp_read_only", "prices", "notify", "compat"}
	if got := Keys(); !reflect.DeepEqual(got, want) {
		t.Errorf("Keys() = %v\nwant %v", got, want)
	}
}

func TestPrices(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "codeagent.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	l, err := Load(Options{File: write("model: m1\nbudget_usd: 0.5\nprices:\n  m1: {input: 2.5, output: 10}\n  other: {input: 0, output: 0}\n"), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := l.PriceOf("m1"); !ok || p != (Price{Input: 2.5, Output: 10, CachedInput: 2.5, CacheWrite: 2.5}) || l.BudgetUSD != 0.5 || !strings.Contains(string(l.Sources["prices"]), "codeagent.yaml:3") {
		t.Errorf("prices %+v budget %v source %q", l.Prices, l.BudgetUSD, l.Sources["prices"])
	}
	for body, want := range map[string]string{
		"prices: 3\n":                             `codeagent.yaml:1: key "prices": want a mapping of model name`,
		"prices:\n  m1: {input: 1}\n":             `codeagent.yaml:2: key "prices": model "m1": output is missing`,
		"prices:\n  m1: {input: -1, output: 1}\n": `codeagent.yaml:2: key "prices": model "m1": input must be 0 or more`,
		"prices:\n  m1: {input: 1, outp: 1}\n":    `model "m1": unknown field "outp" (known: input, output, cached_input, cache_write)`,
		"budget_tokens: -5\n":                     "budget_tokens",
	} {
		_, err := Load(Options{File: write(body), Getenv: func(string) string { return "" }})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}

// include_ignored is a list: a YAML list or comma-separated in the file,
// comma-separated in the environment; setup_command one string.
func TestIncludeIgnoredAndSetupCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "codeagent.yaml")
	if err := os.WriteFile(p, []byte("include_ignored:\n  - .env\n  - node_modules/\nsetup_command: npm ci && make gen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{File: p, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.IncludeIgnored, []string{".env", "node_modules/"}) || l.SetupCommand != "npm ci && make gen" ||
		!strings.Contains(string(l.Sources["include_ignored"]), "codeagent.yaml:1") {
		t.Errorf("from the file: %q %q %s", l.IncludeIgnored, l.SetupCommand, l.Sources["include_ignored"])
	}
	env := map[string]string{"CODEAGENT_INCLUDE_IGNORED": "gen/, .venv/ ,"}
	l, err = Load(Options{File: p, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.IncludeIgnored, []string{"gen/", ".venv/"}) {
		t.Errorf("from the environment: %q", l.IncludeIgnored)
	}
	var b strings.Builder
	if err := l.Print(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gen/,.venv/") || !strings.Contains(b.String(), "npm ci && make gen") {
		t.Errorf("config does not show them:\n%s", b.String())
	}
}

// --egress adds to the file's allow-list (a host more for this run); the
// file's "open" is a list of one like any other.
func TestEgressFlagAdds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "codeagent.yaml")
	if err := os.WriteFile(p, []byte("egress: [proxy.golang.org, \"*.github.com\"]\negress_hosts: [mirror.test=10.0.0.5]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	if err := AddFlags(fs, "egress", "egress_hosts"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--egress", "pypi.org", "--egress", "registry.npmjs.org"}); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{File: p, Flags: fs, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"proxy.golang.org", "*.github.com", "pypi.org", "registry.npmjs.org"}
	if !reflect.DeepEqual(l.Egress, want) || !reflect.DeepEqual(l.EgressHosts, []string{"mirror.test=10.0.0.5"}) {
		t.Errorf("egress %q hosts %q, want %q", l.Egress, l.EgressHosts, want)
	}
	if err := os.WriteFile(p, []byte("egress: open\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = Load(Options{File: p, Getenv: func(string) string { return "" }})
	if err != nil || !reflect.DeepEqual(l.Egress, []string{"open"}) {
		t.Errorf("egress: open → %q, %v", l.Egress, err)
	}
}
