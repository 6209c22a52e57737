package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fullReport() *Report {
	return &Report{
		ID: "t2", RunID: "r1", Attempt: 3, Status: StatusFailed,
		Summary:      "Added the handler; tests fail.\nSee details.",
		FilesChanged: []string{"cmd/server/health.go", "router.go"},
		Tokens:       Tokens{Prompt: 12345, Completion: 678},
		Duration:     Duration(95*time.Second + 250*time.Millisecond),
		Error:        "go test ./... failed: 1 test",
		Body:         "## Details\n\n---\n\nThe test TestHealth fails: 404.\n",
	}
}

func TestReportRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *Report)
	}{
		{"full", func(*Report) {}},
		{"minimal", func(r *Report) { *r = Report{ID: "t1", RunID: "r1", Attempt: 1, Status: StatusCompleted} }},
		{"interrupted", func(r *Report) { r.Status, r.Error = StatusInterrupted, "cancelled by the operator" }},
		{"budget", func(r *Report) {
			r.Status, r.Error, r.Reason = StatusFailed, "budget: stopped after 1200 tokens", ReasonBudget
		}},
		{"unicode and --- in body", func(r *Report) { r.Summary = "完成 ✓"; r.Body = "---\n结果\n---\n" }},
		{"awkward summary", func(r *Report) { r.Summary = "\tindented first\nsecond  \n\n" }},
		{"empty files_changed", func(r *Report) { r.FilesChanged = []string{} }},
		{"cache and server cost", func(r *Report) {
			r.Tokens = Tokens{Prompt: 1000, Completion: 50, Cached: 800, CacheWrite: 150, CostUSD: 0.001234}
		}},
		{"config", func(r *Report) { r.Status, r.Error, r.Reason = StatusFailed, "tool call as text", ReasonConfig }},
		{"subagents", func(r *Report) {
			r.Subagents = []Subagent{
				{ID: "t2.sub1", Goal: "Find where the router is built", Tokens: Tokens{Prompt: 900, Completion: 40, Cached: 600, CacheWrite: 100, CostUSD: 0.0004}},
				{ID: "t2.sub2", Goal: "Write the tests: \"health\" → 200", Tokens: Tokens{Prompt: 300, Completion: 20}},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fullReport()
			tt.edit(r)
			data, err := r.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			back, err := ParseReport("reports/"+r.ID+".md", data)
			if err != nil {
				t.Fatalf("ParseReport: %v\nfile:\n%s", err, data)
			}
			r.FilesChanged = nilIfEmpty(r.FilesChanged)
			if !reflect.DeepEqual(r, back) {
				t.Fatalf("round trip differs\n got: %#v\nwant: %#v\nfile:\n%s", back, r, data)
			}
		})
	}
}

func TestParseReportErrors(t *testing.T) {
	const head = "---\nid: t1\nrun_id: r1\nattempt: 1\n"
	tests := []struct {
		name    string
		data    string
		field   string
		line    int
		problem string
	}{
		{name: "no front matter", data: "status: completed\n", line: 1, problem: "missing front matter"},
		{name: "status missing", data: head + "---\n", field: "status", problem: "missing: must be completed, failed or interrupted"},
		{name: "status unknown", data: head + "status: done\n---\n", field: "status", problem: `"done": must be completed`},
		{name: "status a list", data: head + "status: [completed]\n---\n", field: "status", line: 5, problem: "must be a string"},
		{name: "unknown field", data: head + "status: completed\ncost: 3\n---\n", field: "cost", line: 6, problem: "unknown field"},
		{name: "unknown token field", data: head + "status: completed\ntokens: {prompt: 1, cache_read: 2}\n---\n", field: "tokens.cache_read", line: 6, problem: "unknown field"},
		{name: "tokens not a mapping", data: head + "status: completed\ntokens: 5\n---\n", field: "tokens", line: 6, problem: "must be a mapping"},
		{name: "negative tokens", data: head + "status: completed\ntokens: {prompt: -1}\n---\n", field: "tokens.prompt", problem: "must be >= 0"},
		{name: "negative duration", data: head + "status: completed\nduration: -3s\n---\n", field: "duration", problem: "must not be negative"},
		{name: "files_changed not a list", data: head + "status: completed\nfiles_changed: a.go\n---\n", field: "files_changed", line: 6, problem: "must be a list"},
		{name: "attempt missing", data: "---\nid: t1\nrun_id: r1\nstatus: completed\n---\n", field: "attempt", problem: "must be >= 1"},
		{name: "id mismatch", data: "---\nid: t9\nrun_id: r1\nattempt: 1\nstatus: completed\n---\n", field: "id", problem: "does not match the file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseReport("reports/t1.md", []byte(tt.data))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseReport = %#v, %v; want a *ParseError", r, err)
			}
			if pe.File != "reports/t1.md" || pe.Field != tt.field || pe.Line != tt.line || !strings.Contains(pe.Problem, tt.problem) {
				t.Fatalf("error = %#v\nwant Field %q Line %d Problem containing %q", pe, tt.field, tt.line, tt.problem)
			}
		})
	}
}

func TestReportMarshalRefusesInvalid(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(r *Report)
		field string
	}{
		{"bad status", func(r *Report) { r.Status = "ok" }, "status"},
		{"no run id", func(r *Report) { r.RunID = "" }, "run_id"},
		{"negative completion tokens", func(r *Report) { r.Tokens.Completion = -1 }, "tokens.completion"},
		{"negative duration", func(r *Report) { r.Duration = -1 }, "duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fullReport()
			tt.edit(r)
			var pe *ParseError
			if _, err := r.Marshal(); !errors.As(err, &pe) || pe.Field != tt.field {
				t.Fatalf("Marshal error = %v, want a *ParseError for field %q", err, tt.field)
			}
		})
	}
}

// A sub-agent entry is parsed as strictly as the rest of the report.
func TestReportSubagentsStrict(t *testing.T) {
	head := "---\nid: t1\nrun_id: r1\nattempt: 1\nstatus: completed\nsummary: ok\nfiles_changed: []\ntokens: {prompt: 1, completion: 1}\nduration: 1s\n"
	for name, sub := range map[string]string{
		"not a mapping":  "subagents: [t1.sub1]\n",
		"no id":          "subagents: [{goal: g, tokens: {prompt: 1, completion: 1}}]\n",
		"unknown key":    "subagents: [{id: t1.sub1, goal: g, cost: 3, tokens: {prompt: 1, completion: 1}}]\n",
		"negative count": "subagents: [{id: t1.sub1, goal: g, tokens: {prompt: 1, completion: 1, cached: -2}}]\n",
	} {
		if _, err := ParseReport("reports/t1.md", []byte(head+sub+"---\n")); err == nil || !strings.Contains(err.Error(), "subagents") {
			t.Errorf("%s: err = %v, want one naming subagents", name, err)
		}
	}
}
