package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{
		"a.go":       "package a\n\nfunc A() {}\n",
		"noeol.txt":  "one\ntwo",
		"crlf.txt":   "one\r\ntwo\r\n",
		"empty.txt":  "",
		"big.txt":    numbered(2500),
		"exact.txt":  numbered(2000),
		"bin.dat":    "ELF\x00\x01\x02",
		"dir/x.txt":  "x",
		"long.txt":   strings.Repeat("é", 3000) + "\n",
		"ten.txt":    numbered(10),
		"sub/ok.txt": "ok",
	})
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    []string
		notWant []string
	}{
		{"whole file", args{"path": "a.go"}, false, []string{"     1\tpackage a\n     2\t\n     3\tfunc A() {}"}, []string{"showing"}},
		{"no final newline", args{"path": "noeol.txt"}, false, []string{"     2\ttwo"}, nil},
		{"crlf stripped", args{"path": "crlf.txt"}, false, []string{"     1\tone\n     2\ttwo"}, []string{"\r"}},
		{"empty", args{"path": "empty.txt"}, false, []string{"is empty"}, nil},
		{"range", args{"path": "ten.txt", "start_line": 3, "end_line": 5}, false,
			[]string{"     3\tline 3\n     4\tline 4\n     5\tline 5", "showing lines 3-5 of 10"}, []string{"line 2\n", "line 6"}},
		{"start only", args{"path": "ten.txt", "start_line": 9}, false, []string{"     9\tline 9\n    10\tline 10"}, []string{"line 8"}},
		{"end past eof is clamped", args{"path": "ten.txt", "start_line": 8, "end_line": 50}, false, []string{"    10\tline 10", "8-10 of 10"}, nil},
		{"over 2000 lines without range", args{"path": "big.txt"}, false,
			[]string{"   100\tline 100", "file has 2500 lines; showing 1-100. Read more with start_line/end_line."}, []string{"line 101"}},
		{"exactly 2000 lines shown whole", args{"path": "exact.txt"}, false, []string{"  2000\tline 2000"}, []string{"showing"}},
		{"range in a big file", args{"path": "big.txt", "start_line": 2400, "end_line": 2401}, false,
			[]string{"  2400\tline 2400\n  2401\tline 2401"}, nil},
		{"long line cut", args{"path": "long.txt"}, false, []string{"[... line cut ...]"}, nil},
		{"absolute inside", args{"path": filepath.Join(ws.Root(), "sub/ok.txt")}, false, []string{"     1\tok"}, nil},
		{"missing file", args{"path": "nope.go"}, true, []string{`file "nope.go" does not exist`}, nil},
		{"directory", args{"path": "dir"}, true, []string{`"dir" is a directory; use list_dir`}, nil},
		{"binary", args{"path": "bin.dat"}, true, []string{"binary"}, nil},
		{"start past eof", args{"path": "ten.txt", "start_line": 11}, true, []string{"past the end", "10 lines"}, nil},
		{"start after end", args{"path": "ten.txt", "start_line": 5, "end_line": 2}, true, []string{"start_line 5 is after end_line 2"}, nil},
		{"negative", args{"path": "ten.txt", "start_line": -1}, true, []string{"positive"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, "read_file", tt.args)
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v, content %q", res.IsError, res.Content)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content does not contain %q:\n%s", w, head(res.Content))
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.Content, w) {
					t.Errorf("content contains %q:\n%s", w, head(res.Content))
				}
			}
			if !tt.isError && (len(res.Files) != 1 || res.Files[0].Changed || res.Files[0].Path == "") {
				t.Errorf("Files = %+v, want one unchanged file", res.Files)
			}
		})
	}
	t.Run("files names the workspace path", func(t *testing.T) {
		res := run(t, ws, "read_file", args{"path": "./sub/../sub/ok.txt"})
		if res.Files[0].Path != "sub/ok.txt" {
			t.Errorf("Files = %+v, want sub/ok.txt", res.Files)
		}
	})
}

func head(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
