package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestRepoMapTool(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{
		"go.mod":            "module example.com/m\n",
		"core/core.go":      "package core\n\n// Engine runs things.\ntype Engine struct{}\n\nfunc (e *Engine) Start() error { return nil }\n",
		"app/app.go":        "package app\n\nimport \"example.com/m/core\"\n\nfunc Run() { (&core.Engine{}).Start() }\n",
		"web/ui.ts":         "export function render(): void {}\n",
		"docs/README.md":    "# docs\n",
		"vendor/v/v.go":     "package v\n\nfunc Vendored() {}\n",
		"core/core_test.go": "package core\n\nfunc TestEngineStarts() {}\n",
	})
	set := NewSet(NewRepoMap(ws, t.TempDir(), ""))
	tests := []struct {
		name     string
		args     any
		isError  bool
		contains []string
		absent   []string
	}{
		{"whole workspace", map[string]any{}, false,
			[]string{"Repo map of the workspace: 3 source files", "core/core.go:\n", "type Engine struct", "func (e *Engine) Start() error", "web/ui.ts"},
			[]string{"Vendored", "README", "TestEngineStarts"}},
		{"tests asked for", map[string]any{"tests": true}, false,
			[]string{"Repo map of the workspace: 4 source files", "core/core_test.go:\n", "func TestEngineStarts()"}, []string{"Vendored"}},
		{"directory", map[string]any{"path": "web"}, false,
			[]string{"Repo map of web: 1 source files", "export function render(): void"}, []string{"Engine"}},
		{"file", map[string]any{"path": "core/core.go", "tokens": 50}, false, []string{"type Engine struct"}, []string{"web/ui.ts"}},
		{"nothing to map", map[string]any{"path": "docs"}, false, []string{"no source files to map in docs"}, nil},
		{"tiny budget", map[string]any{"tokens": 1}, false, []string{"ask for more"}, nil},
		{"outside", map[string]any{"path": "../.."}, true, []string{"outside the workspace"}, nil},
		{"missing", map[string]any{"path": "nope"}, true, []string{"does not exist"}, nil},
		{"negative tokens", map[string]any{"tokens": -5}, true, []string{"tokens must be positive"}, nil},
		{"wrong type", `{"tokens": "many"}`, true, []string{"tokens"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ok := tt.args.(string)
			if !ok {
				b, err := json.Marshal(tt.args)
				if err != nil {
					t.Fatal(err)
				}
				raw = string(b)
			}
			res, err := Call(t.Context(), set, "repo_map", raw)
			if err != nil {
				t.Fatalf("Go error: %v", err)
			}
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tt.isError, res.Content)
			}
			for _, want := range tt.contains {
				if !strings.Contains(res.Content, want) {
					t.Errorf("result lacks %q:\n%s", want, res.Content)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(res.Content, bad) {
					t.Errorf("result has %q:\n%s", bad, res.Content)
				}
			}
		})
	}
	tool, _ := set.Get("repo_map")
	if !tool.ReadOnly() {
		t.Error("repo_map must be read-only (offered in plan mode)")
	}
}

// The agent's focused files rank higher, so they come first in the map.
func TestRepoMapToolFocusBoost(t *testing.T) {
	files := map[string]string{
		"go.mod":       "module example.com/m\n",
		"core/core.go": "package core\n\n// Engine runs things.\ntype Engine struct{}\n\nfunc (e *Engine) Start() error { return nil }\n",
		"a/a.go":       "package a\n\nimport \"example.com/m/core\"\n\nfunc A() { (&core.Engine{}).Start() }\n",
		"b/b.go":       "package b\n\nimport \"example.com/m/core\"\n\nfunc B() { (&core.Engine{}).Start() }\n",
		"leaf/leaf.go": "package leaf\n\nfunc Lonely() {}\n",
	}
	ws := newTestWorkspace(t, files)
	set := NewSet(NewRepoMap(ws, "", ""))
	first := func(ctx context.Context) string {
		res, err := Call(ctx, set, "repo_map", `{}`)
		if err != nil || res.IsError {
			t.Fatalf("%v %s", err, res.Content)
		}
		lines := strings.Split(res.Content, "\n")
		return lines[1] // the line after the header: the top-ranked file
	}
	if got := first(t.Context()); got != "core/core.go:" {
		t.Fatalf("unboosted top file %q, want core/core.go:", got)
	}
	if got := first(WithFocus(t.Context(), []string{"leaf/leaf.go"})); got != "leaf/leaf.go:" {
		t.Fatalf("focused top file %q, want leaf/leaf.go:", got)
	}
}
