package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLoopDetector(t *testing.T) {
	tests := []struct {
		name  string
		calls []string // "name args"
		want  string   // "" = no loop on the last call
	}{
		{name: "two identical", calls: []string{`r {"p":1}`, `r {"p":1}`}},
		{name: "three identical", calls: []string{`r {"p":1}`, `r {"p":1}`, `r {"p":1}`}, want: "the same tool call"},
		{name: "key order ignored", calls: []string{`r {"a":1,"b":2}`, `r {"b":2,"a":1}`, `r { "a":1, "b":2 }`}, want: "the same tool call"},
		{name: "progress in between", calls: []string{`r {"p":1}`, `e {"x":1}`, `r {"p":1}`, `e {"x":2}`, `r {"p":1}`}},
		{name: "cycle of two", calls: []string{`a {}`, `b {}`, `a {}`, `b {}`, `a {}`, `b {}`}, want: "a cycle of 2"},
		{name: "cycle of three", calls: []string{`a {}`, `b {}`, `c {}`, `a {}`, `b {}`, `c {}`, `a {}`, `b {}`, `c {}`}, want: "a cycle of 3"},
		{name: "cycle twice only", calls: []string{`a {}`, `b {}`, `a {}`, `b {}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d loopDetector
			var reason string
			var loop bool
			for i, c := range tt.calls {
				name, args, _ := strings.Cut(c, " ")
				reason, loop = d.add(name, args)
				if loop && i < len(tt.calls)-1 {
					t.Fatalf("loop reported early at call %d: %s", i, reason)
				}
			}
			if loop != (tt.want != "") || !strings.Contains(reason, tt.want) {
				t.Errorf("loop = %v %q, want %q", loop, reason, tt.want)
			}
		})
	}
}

func TestHeadTail(t *testing.T) {
	long := strings.Repeat("é", 3000) // 2 bytes each
	tests := []struct {
		name string
		in   string
		n    int
	}{
		{name: "short kept", in: "abc", n: 10},
		{name: "ascii", in: strings.Repeat("0123456789", 500), n: 2000},
		{name: "multibyte not split", in: long, n: 1001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := headTail(tt.in, tt.n)
			if len(tt.in) <= tt.n {
				if got != tt.in {
					t.Errorf("short input changed")
				}
				return
			}
			if !utf8.ValidString(got) || !strings.Contains(got, "chars cut") || len(got) > tt.n+50 {
				t.Errorf("headTail gave %d bytes, valid %v", len(got), utf8.ValidString(got))
			}
			if !strings.HasPrefix(tt.in, strings.Split(got, "\n[...")[0]) || !strings.HasSuffix(tt.in, got[strings.LastIndex(got, "]\n")+2:]) {
				t.Errorf("head or tail not taken from the input")
			}
		})
	}
}

func TestFormatTask(t *testing.T) {
	got := formatTask(Task{ID: "T3", Title: "Add login", Description: "Implement login.",
		Acceptance: []string{"tests pass", " "}, Resources: []string{"auth/"}, Hints: []string{"use bcrypt"},
		Dependencies: []Dependency{{ID: "T1", Summary: "created the user table"}, {ID: "T2"}}})
	for _, want := range []string{"# Task T3: Add login\n", "Implement login.", "## Acceptance criteria\n\n- tests pass\n",
		"### T1\ncreated the user table", "### T2\n(no summary)", "- auth/", "## Hints\n\n- use bcrypt"} {
		if !strings.Contains(got, want) {
			t.Errorf("task message lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "- \n") {
		t.Errorf("blank acceptance item rendered:\n%s", got)
	}
}
