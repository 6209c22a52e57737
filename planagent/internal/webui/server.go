// Package webui is planagent's local, read-only web view of its runs: the
// list of runs, a run's task graph coloured by status and updated live
// (server-sent events driven by fsnotify on the run's state and the
// reports), the timeline of attempts, per-task tokens, cost and time, the
// running task's events as they come, and each task's report and diff.
// The page's assets are embedded, so it works offline.
package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/fswatch"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
)

//go:embed assets
var assets embed.FS

// DefaultAddr is where the web view listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7420"

// Options configure the server.
type Options struct {
	Layout volume.Layout
	View   runview.Options
	Logger *slog.Logger
	// Reconcile is how often a live stream re-reads the run even without a
	// file event (fsnotify misses events on some mounts); default 2s.
	Reconcile time.Duration
	// Token is the session's token, without which the page cannot write
	// (review comments, sending them); "" makes the view read-only.
	Token string
	// Watch opens the streams' watchers; without file events a stream
	// re-reads the run every Reconcile (nil: fsnotify).
	Watch *fswatch.Opener
}

// Server serves the web view. It only reads, but for review comments
// (review.go), which need the session's token.
type Server struct {
	opts Options
	mux  *http.ServeMux
	// loopbackOnly refuses requests whose Host is not a loopback name, so a
	// web page elsewhere cannot read the runs through DNS rebinding.
	loopbackOnly bool
}

// New returns the web view's handler over opts.Layout.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Reconcile <= 0 {
		opts.Reconcile = 2 * time.Second
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /assets/status.css", s.statusCSS)
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /api/runs", s.runs)
	s.mux.HandleFunc("GET /api/runs/{run}", s.run)
	s.mux.HandleFunc("GET /api/runs/{run}/stream", s.stream)
	s.mux.HandleFunc("GET /api/runs/{run}/tasks/{task}", s.task)
	s.mux.HandleFunc("GET /api/runs/{run}/review", s.reviewList)
	s.mux.HandleFunc("POST /api/runs/{run}/tasks/{task}/comments", s.comment)
	s.mux.HandleFunc("POST /api/runs/{run}/review/send", s.send)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.loopbackOnly && !loopbackHost(r.Host) {
		http.Error(w, "this web view answers only to localhost, 127.0.0.1 or [::1]", http.StatusForbidden)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// Listen opens addr for the web view. A non-loopback address is allowed
// (the user asked for it) but reported, since the view then shows the
// runs to the network.
func Listen(addr string) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("web view address %q: want host:port such as %s: %w", addr, DefaultAddr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("web view: listen on %s: %w (pick another with --addr / --ui-addr)", addr, err)
	}
	warning := ""
	if !loopbackHost(host) {
		warning = fmt.Sprintf("the web view listens on %s, beyond this machine: anyone who can reach it can read the runs", ln.Addr())
	}
	return ln, warning, nil
}

// URL is the address of the view on ln that a browser on this machine can
// open: a listener on every interface (0.0.0.0, ::) has no host to type,
// and the loopback address reaches it.
func URL(ln net.Listener) string {
	addr := ln.Addr().String()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Serve serves the web view on ln until ctx ends. On a loopback listener
// it answers only requests addressed to a loopback name.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		s.loopbackOnly = true
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	_, _ = w.Write(b)
}

// statusCSS is the status colours of the pictures, from runview's one table.
func (s *Server) statusCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	for _, st := range runview.Statuses() {
		fill, stroke := runview.Colour(st)
		fmt.Fprintf(w, ".st-%s{--fill:%s;--stroke:%s}\n", st, fill, stroke)
	}
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	rows, err := runview.List(s.opts.Layout, s.opts.View)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, rows)
}

// load reads the run named in the path; it answers the request itself on error.
func (s *Server) load(w http.ResponseWriter, r *http.Request) (*runrecord.State, bool) {
	id := r.PathValue("run")
	if err := protocol.ValidateID(id); err != nil {
		http.Error(w, "run id: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	st, err := runrecord.LoadState(s.opts.Layout, id, false)
	if errors.Is(err, runrecord.ErrNoRun) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return nil, false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return st, true
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	writeJSON(w, runview.Build(st, s.opts.View))
}
