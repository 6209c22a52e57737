package webui

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/review"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

func postAs(t *testing.T, url, token, origin, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Writes need the session's token and the page's own origin; with both,
// a comment is saved and sending makes the follow-up task in the run.
func TestReviewWritesNeedTokenAndOrigin(t *testing.T) {
	f := newFixture(t)
	base := f.serveToken(t, "tok-1")
	url := base + "/api/runs/" + runID + "/tasks/a/comments"
	body := `{"file":"a.txt","line":3,"text":"name it A"}`
	for _, c := range []struct{ name, token, origin string }{
		{"no token", "", base},
		{"wrong token", "tok-2", base},
		{"another site", "tok-1", "http://evil.example"},
		{"no origin", "tok-1", ""},
	} {
		if code, msg := postAs(t, url, c.token, c.origin, body); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.name, code, msg)
		}
	}
	if cs, _ := review.Open(f.l.Run(runID)).List(); len(cs) != 0 {
		t.Fatalf("a refused write was saved: %v", cs)
	}
	if code, msg := postAs(t, base+"/api/runs/"+runID+"/tasks/b/comments", "tok-1", base, body); code != http.StatusConflict {
		t.Errorf("a comment on an unfinished task: %d %s, want 409", code, msg)
	}
	if code, msg := postAs(t, url, "tok-1", base, body); code != http.StatusCreated {
		t.Fatalf("comment: %d %s", code, msg)
	}
	var cs []review.Comment
	if get(t, base+"/api/runs/"+runID+"/review", &cs); len(cs) != 1 || cs[0].Where() != "a.txt:3" || cs[0].Text != "name it A" {
		t.Fatalf("review: %+v", cs)
	}

	// While a planagent drives the run, sending waits for its next resume.
	lock, err := runlock.Acquire(f.l.Run(runID))
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := postAs(t, base+"/api/runs/"+runID+"/review/send", "tok-1", base, "{}"); code != http.StatusConflict || !strings.Contains(msg, "next resume") {
		t.Errorf("send while driven: %d %s", code, msg)
	}
	lock.Release()
	code, msg := postAs(t, base+"/api/runs/"+runID+"/review/send", "tok-1", base, "{}")
	if code != http.StatusOK {
		t.Fatalf("send: %d %s", code, msg)
	}
	var out struct {
		Sent []review.Sent `json:"sent"`
		Next string        `json:"next"`
	}
	if err := json.Unmarshal([]byte(msg), &out); err != nil || len(out.Sent) != 1 || out.Sent[0].FollowUp != "a-review" || out.Next != "planagent resume "+runID {
		t.Fatalf("send answered %s (%v)", msg, err)
	}
	st, err := runrecord.LoadState(f.l, runID, false)
	if err != nil {
		t.Fatal(err)
	}
	last := st.Tasks[len(st.Tasks)-1]
	if last.ID != "a-review" || last.Dependencies[0] != "a" || !strings.Contains(last.Description, "a.txt:3: name it A") {
		t.Errorf("the follow-up task: %+v", last)
	}
	if get(t, base+"/api/runs/"+runID+"/review", &cs); cs[0].FollowUp != "a-review" {
		t.Errorf("the comment was not marked sent: %+v", cs)
	}
	if code, _ := postAs(t, base+"/api/runs/"+runID+"/review/send", "tok-1", base, "{}"); code != http.StatusConflict {
		t.Errorf("a second send with nothing pending: %d, want 409", code)
	}
}
