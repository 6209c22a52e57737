package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestPrintGolden(t *testing.T) {
	const key = "sk-proj-THISISSECRET0123456789wxyz"
	dir := t.TempDir()
	file := writeFile(t, dir, "codeagent.yaml", "# team settings\nmodel: gpt-4.1\ncontext_window: 64000\nvolumes_dir: /srv/volumes\nrequest_timeout: 90s\n")
	fs := flags(t, []string{"runtime", "workspace_dir"}, "--runtime", "local", "--workspace", "/src/app")
	l, err := Load(Options{File: file, Flags: fs, Getenv: env(map[string]string{
		"OPENAI_API_KEY":         key,
		"OPENAI_BASE_URL":        "http://localhost:11434/v1",
		"CODEAGENT_PARALLEL":     "3",
		"CODEAGENT_TASK_TIMEOUT": "1h30m",
	})})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var buf bytes.Buffer
	if err := l.Print(&buf); err != nil {
		t.Fatalf("Print: %v", err)
	}
	got := strings.ReplaceAll(buf.String(), dir, "$DIR")
	if strings.Contains(buf.String(), key) || strings.Contains(buf.String(), "SECRET") {
		t.Fatalf("Print shows the API key:\n%s", buf.String())
	}

	golden := filepath.Join("testdata", "print.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("Print output differs from %s (run go test -update to accept):\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

func TestPrintWithoutFileOrKey(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var buf bytes.Buffer
	if err := l.Print(&buf); err != nil {
		t.Fatalf("Print: %v", err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "user config: (none)\nconfig file: (none)\n") {
		t.Errorf("output does not start with the file line:\n%s", out)
	}
	rows := make(map[string][]string)
	for _, line := range strings.Split(out, "\n") {
		if cols := strings.Fields(line); len(cols) > 0 {
			rows[cols[0]] = cols
		}
	}
	for key, want := range map[string][]string{
		"api_key":       {"api_key", "(not", "set)", "default"},
		"workspace_dir": {"workspace_dir", `""`, "default"},
	} {
		if got := rows[key]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("row %s = %q, want %q", key, got, want)
		}
	}
	table, _, _ := strings.Cut(out, "\nprovider profile")
	if n := strings.Count(table, "\n"); n != len(Keys())+4+len(l.Catalog) {
		t.Errorf("got %d lines, want %d (two file lines, blank, column titles, one per key, one per catalog entry)", n, len(Keys())+4+len(l.Catalog))
	}
}

func TestMaskKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"", "(not set)"},
		{"sk-abcdefghijklmnopqrstu1234", "sk-…1234"},
		{"gsk_abcdefghijklmnop9876", "…9876"},
		{"short-key", "(set, 9 chars, hidden)"},
		{"ключ-секретный-0123", "…0123"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := MaskKey(tt.key)
			if got != tt.want {
				t.Errorf("MaskKey = %q, want %q", got, tt.want)
			}
			if tt.key != "" && strings.Contains(got, tt.key) {
				t.Errorf("MaskKey(%q) contains the whole key", tt.key)
			}
		})
	}
}

func TestAddFlagsUnknownKey(t *testing.T) {
	fs := flags(t, nil)
	err := AddFlags(fs, "modle")
	if err == nil || !strings.Contains(err.Error(), `unknown key "modle"`) {
		t.Errorf("AddFlags(modle) error = %v, want one naming the key", err)
	}
}

func TestFormatUSD(t *testing.T) {
	for v, want := range map[float64]string{
		0.015:  "$0.015",
		2:      "$2.00",
		0.1:    "$0.10",
		2.5:    "$2.50",
		12.345: "$12.345",
		0:      "$0.00",
	} {
		if got := FormatUSD(v); got != want {
			t.Errorf("FormatUSD(%g) = %q, want %q", v, got, want)
		}
	}
}

// With the anthropic api there is no Chat Completions request to adapt:
// config shows no compat table, and says why; with chat it shows one.
func TestPrintProfileOnlyForChat(t *testing.T) {
	t.Chdir(t.TempDir())
	for base, table := range map[string]bool{"https://api.anthropic.com": false, "https://api.openai.com/v1": true} {
		l, err := Load(Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": base, "OPENAI_MODEL": "claude-sonnet-4-5"})})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		var buf bytes.Buffer
		if err := l.Print(&buf); err != nil {
			t.Fatalf("Print: %v", err)
		}
		out := buf.String()
		if got := strings.Contains(out, "COMPAT KEY"); got != table {
			t.Errorf("%s: compat table shown %v, want %v:\n%s", base, got, table, out)
		}
		if !table && !strings.Contains(out, "provider profile: none (the anthropic api") {
			t.Errorf("%s: no word on why there is no profile:\n%s", base, out)
		}
	}
}
