package watch

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// A later attempt continues the task's conversation from its session: after
// a finished attempt with a follow-up carrying the hints, after an
// interrupted one by resuming where it stopped.
func TestAgentRunnerLaterAttempt(t *testing.T) {
	tests := []struct {
		name         string
		interruptMid bool   // attempt 1 is cancelled after its tool call
		wantFollowUp bool   // attempt 2 sends the retry message
		wantAnswer   string // attempt 2's answer
	}{
		{name: "earlier attempt finished", wantFollowUp: true, wantAnswer: "Checked: already done."},
		{name: "earlier attempt interrupted", interruptMid: true, wantAnswer: "Wrote t1.txt."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			srv := llmtest.New(t)
			var mu sync.Mutex
			hang := tt.interruptMid
			afterTool := make(chan struct{}, 1)
			var attempt2 []llmtest.Request
			recording := false
			srv.Handle(func(req llmtest.Request) llmtest.Reply {
				mu.Lock()
				defer mu.Unlock()
				if isMemoryRequest(req) {
					return llmtest.Text("- none")
				}
				if recording {
					attempt2 = append(attempt2, req)
				}
				last := req.Messages[len(req.Messages)-1]
				switch {
				case last.Role == llm.RoleTool && hang:
					afterTool <- struct{}{}
					return llmtest.Reply{Content: "late", Delay: time.Minute}
				case last.Role == llm.RoleTool:
					return llmtest.Text("Wrote t1.txt.")
				case strings.HasPrefix(last.Content, "This is attempt"):
					return llmtest.Text("Checked: already done.")
				}
				return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "t1.txt", "content": "x"}))
			})
			runner := agentRunner(t, l, srv)

			ctx, cancel := context.WithCancel(t.Context())
			if tt.interruptMid {
				go func() {
					select {
					case <-afterTool:
					case <-time.After(testWait):
					}
					cancel()
				}()
			}
			rep, err := runner.Run(ctx, command("t1", 1), "context", events.Discard)
			cancel()
			if err != nil {
				t.Fatalf("attempt 1: %v", err)
			}
			want1 := protocol.StatusCompleted
			if tt.interruptMid {
				want1 = protocol.StatusInterrupted
			}
			if rep.Status != want1 {
				t.Fatalf("attempt 1: status %s (%s), want %s", rep.Status, rep.Error, want1)
			}

			mu.Lock()
			hang, recording = false, true
			mu.Unlock()
			cmd := command("t1", 2)
			cmd.Hints = []string{"keep the file short"}
			rep, err = runner.Run(t.Context(), cmd, "context", events.Discard)
			if err != nil || rep.Status != protocol.StatusCompleted || rep.Body != tt.wantAnswer {
				t.Fatalf("attempt 2: %+v, %v; want completed with %q", rep, err, tt.wantAnswer)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(attempt2) == 0 {
				t.Fatal("attempt 2 made no model request")
			}
			first := attempt2[0].Messages
			var tasks, followUps int
			for _, m := range first {
				if strings.HasPrefix(m.Content, "# Task t1:") {
					tasks++
				}
				if strings.HasPrefix(m.Content, "This is attempt 2 of task t1") {
					followUps++
					if !strings.Contains(m.Content, "keep the file short") {
						t.Errorf("the follow-up does not carry the hints: %q", m.Content)
					}
				}
			}
			if tasks != 1 {
				t.Errorf("attempt 2's request has the task message %d times, want once (the earlier conversation)", tasks)
			}
			if got := followUps == 1; got != tt.wantFollowUp {
				t.Errorf("follow-up sent = %v, want %v", got, tt.wantFollowUp)
			}
			if r := srv.Rejections(); len(r) > 0 {
				t.Errorf("the model server rejected requests: %v", r)
			}
		})
	}
}
