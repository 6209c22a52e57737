package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
)

func msg(role, content string) *llm.Message {
	return &llm.Message{Role: role, Content: content}
}

func TestAppendLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "s.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Kind: KindTask, TaskID: "t1"},
		{Kind: KindMessage, Message: msg("user", "hello")},
		{Kind: KindFocus, Path: "a.go", Edited: true},
		{Kind: KindCompaction, Start: 1, End: 3, Summary: "sum"},
	}
	for _, r := range want {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || got[i].TaskID != want[i].TaskID || got[i].Path != want[i].Path ||
			got[i].Edited != want[i].Edited || got[i].Start != want[i].Start || got[i].End != want[i].End ||
			got[i].Summary != want[i].Summary || got[i].Time.IsZero() {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[1].Message.Content != "hello" {
		t.Errorf("message content = %q", got[1].Message.Content)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(want[0]); err == nil {
		t.Error("append after close succeeded")
	}
}

func TestTornAndCorruptLines(t *testing.T) {
	good := `{"kind":"message","message":{"role":"user","content":"one"}}` + "\n"
	tests := []struct {
		name      string
		content   string
		wantN     int
		wantErr   string
		afterOpen string // file content after Open repaired it; "" = unchanged check skipped
	}{
		{name: "empty", content: "", wantN: 0},
		{name: "complete", content: good + good, wantN: 2},
		{name: "torn last line", content: good + `{"kind":"message","mess`, wantN: 1, afterOpen: good},
		{name: "only a torn line", content: `{"kind":"mess`, wantN: 0, afterOpen: ""},
		{name: "corrupt middle line", content: good + "garbage\n" + good, wantErr: "line 2 is corrupt"},
		{name: "record without kind", content: good + "{}\n" + good, wantErr: "line 2 is corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			recs, err := Read(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Read error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tt.wantN {
				t.Fatalf("Read gave %d records, want %d", len(recs), tt.wantN)
			}
			l, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if strings.HasPrefix(tt.name, "torn") || strings.HasPrefix(tt.name, "only") {
				b, _ := os.ReadFile(path)
				if string(b) != tt.afterOpen {
					t.Fatalf("after Open file = %q, want %q", b, tt.afterOpen)
				}
			}
			if err := l.Append(Record{Kind: KindMessage, Message: msg("assistant", "two")}); err != nil {
				t.Fatal(err)
			}
			recs, err = l.Load()
			if err != nil {
				t.Fatalf("Load after append to repaired file: %v", err)
			}
			if len(recs) != tt.wantN+1 || recs[len(recs)-1].Message.Content != "two" {
				t.Fatalf("after append: %d records, last %+v", len(recs), recs[len(recs)-1])
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	recs, err := Read(filepath.Join(t.TempDir(), "none.jsonl"))
	if err != nil || recs != nil {
		t.Fatalf("Read missing = %v, %v; want nil, nil", recs, err)
	}
}

func TestTornTailLongerThanChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	good := `{"kind":"task","task_id":"x"}` + "\n"
	torn := `{"kind":"message","message":{"role":"user","content":"` + strings.Repeat("x", 200<<10)
	if err := os.WriteFile(path, []byte(good+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, _ := os.ReadFile(path)
	if string(b) != good {
		t.Fatalf("torn tail not cut: %d bytes left", len(b))
	}
}
