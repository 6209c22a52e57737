package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/review"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The page reads everything; what it writes — review comments, and sending
// them to the agent as follow-up tasks — needs the session's token (printed
// in the URL the command shows, as Jupyter does) in a header, and a
// same-origin request (Origin is this server), so another site open in the
// browser cannot post.

// TokenHeader carries the session's token on the page's writes.
const TokenHeader = "X-CodeAgent-Token"

// NewToken makes a session token.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writable refuses a write without the token or from another origin.
func (s *Server) writable(w http.ResponseWriter, r *http.Request) bool {
	tok := r.Header.Get(TokenHeader)
	if s.opts.Token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) != 1 {
		http.Error(w, "this needs the session's token: open the page from the URL planagent printed (…/?token=…)", http.StatusForbidden)
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "http://"+r.Host {
		http.Error(w, "cross-origin writes are refused", http.StatusForbidden)
		return false
	}
	return true
}

func (s *Server) reviewList(w http.ResponseWriter, r *http.Request) {
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	cs, err := review.Open(s.opts.Layout.Run(st.RunID)).List()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if cs == nil {
		cs = []review.Comment{}
	}
	writeJSON(w, cs)
}

func (s *Server) comment(w http.ResponseWriter, r *http.Request) {
	if !s.writable(w, r) {
		return
	}
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	id := r.PathValue("task")
	var t taskgraph.Task
	for _, x := range st.Tasks {
		if x.ID == id {
			t = x
		}
	}
	if t.ID == "" || protocol.ValidateID(id) != nil {
		http.Error(w, fmt.Sprintf("run %s has no task %q", st.RunID, id), http.StatusNotFound)
		return
	}
	if t.Status != taskgraph.Completed {
		http.Error(w, fmt.Sprintf("task %s is %s: only a completed task's change can be reviewed", id, t.Status), http.StatusConflict)
		return
	}
	var in struct {
		File string `json:"file"`
		Line int    `json:"line"`
		Text string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, "want JSON {file, line, text}: "+err.Error(), http.StatusBadRequest)
		return
	}
	file, line, err := review.ParseWhere(fmt.Sprintf("%s:%d", in.File, in.Line))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := review.Open(s.opts.Layout.Run(st.RunID)).Add(review.Comment{Task: id, File: file, Line: line, Text: in.Text})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, c)
}

// send turns the run's pending comments into follow-up tasks now, so the
// next `planagent resume` carries them out. Refused while a planagent
// drives the run (it holds the run's lock).
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	if !s.writable(w, r) {
		return
	}
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	lock, err := runlock.Acquire(s.opts.Layout.Run(st.RunID))
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, runlock.ErrHeld) {
			status = http.StatusConflict
		}
		http.Error(w, err.Error()+": the comments stay pending and go out on the run's next resume", status)
		return
	}
	defer lock.Release()
	if st, ok = s.load(w, r); !ok { // again, under the lock
		return
	}
	store := review.Open(s.opts.Layout.Run(st.RunID))
	cs, err := store.List()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	pending := review.Pending(cs)
	if len(pending) == 0 {
		http.Error(w, "no pending comments to send", http.StatusConflict)
		return
	}
	sent, err := review.Send(s.opts.Layout, st, pending, func(commit string) string {
		d, _ := diff(r.Context(), st, commit, true)
		return d
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"sent": sent, "next": "planagent resume " + st.RunID})
}
