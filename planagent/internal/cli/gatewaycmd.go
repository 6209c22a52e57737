package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/refusals"
)

// GatewayTokenEnv holds the token a watcher that planagent does not start
// (the compose service) presents to `planagent gateway`.
const GatewayTokenEnv = "CODEAGENT_GATEWAY_TOKEN"

// gatewayFlags are where `planagent gateway` listens.
type gatewayFlags struct {
	addr       string // TCP host:port
	unix       string // the model gateway's unix socket
	egressUnix string // the egress proxy's unix socket
	refusals   string // the file each egress refusal is appended to
}

// NewCmdGateway builds `planagent gateway`: the model gateway as a service
// of its own, for the compose file's codingagent watcher, so that the
// provider's key is in the gateway's service and not in the watcher's.
func NewCmdGateway(f *cmdutil.Factory) *cobra.Command {
	var fl gatewayFlags
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the model API to a codingagent watcher without giving it the key",
		Long: `Serve the model API (the configured base_url, api and key) to a codingagent
watcher that planagent does not start, such as the compose file's: the watcher
gets ` + GatewayTokenEnv + ` as its OPENAI_API_KEY and this gateway as its
OPENAI_BASE_URL; the gateway checks the token, puts the real key in its place
and forwards each request. The key stays in this process.

With --unix and --egress-unix it serves a watcher that has no network (compose:
network_mode none) on two unix sockets of a directory both share: the model
gateway, and the egress proxy admitting only the egress allow-list (--egress,
CODEAGENT_EGRESS or egress: in the config; none by default). The watcher's
CODEAGENT_RELAY carries its loopback ports to them. Refusals are JSON lines on
stderr and, with --refusals, in a file of the volumes that a planagent run
reusing the watcher follows (each refusal an event of the run and part of its
task's result; the file is rotated at 4 MiB to FILE.1). --addr is then served
only when given. Stop it with Ctrl-C or SIGTERM. See docs/gateway.md.`,
		Example: `  export ` + GatewayTokenEnv + `=$(openssl rand -hex 32)
  planagent gateway --addr 0.0.0.0:8080
  planagent gateway --unix /run/codeagent/gateway.sock --egress-unix /run/codeagent/proxy.sock --egress proxy.golang.org \
    --refusals /app/volumes/egress/refusals.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGateway(cmd, f, fl) },
	}
	cmd.Flags().StringVar(&fl.addr, "addr", "0.0.0.0:8080", "host:port to listen on (not served when --unix is given, unless --addr is given too)")
	cmd.Flags().StringVar(&fl.unix, "unix", "", "unix socket to serve the model gateway on (a watcher without a network relays to it)")
	cmd.Flags().StringVar(&fl.egressUnix, "egress-unix", "", "unix socket to serve the egress proxy on, admitting only the egress allow-list")
	cmd.Flags().StringVar(&fl.refusals, "refusals", "", "file to append each egress refusal to as a JSON line, for planagent runs to follow (VOLUMES/egress/refusals.jsonl; rotated at 4 MiB)")
	cmdutil.SettingFlags(cmd.Flags(), "egress", "egress_hosts")
	return cmd
}

func runGateway(cmd *cobra.Command, f *cmdutil.Factory, fl gatewayFlags) error {
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	// JSON lines: `docker compose logs gateway` is read by tools as much as
	// by people, and a refusal's host and reason are fields.
	logger := slog.New(slog.NewJSONHandler(f.IO.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := &session{f: f, cfg: l.Config, logger: logger}
	if s.cfg.APIKey == "" {
		return cmdutil.UsageError(llm.ErrNoAPIKey)
	}
	token := f.Getenv(GatewayTokenEnv)
	if token == "" {
		return cmdutil.UsageError(fmt.Errorf("%s is not set: set it to a random token (export %s=$(openssl rand -hex 32)) and give the watcher the same as its OPENAI_API_KEY",
			GatewayTokenEnv, GatewayTokenEnv))
	}
	tcp := fl.addr != "" && (fl.unix == "" || cmd.Flags().Changed("addr"))
	if !tcp && fl.unix == "" {
		return cmdutil.UsageError(errors.New("nothing to listen on: give --addr HOST:PORT or --unix PATH"))
	}
	if fl.refusals != "" && fl.egressUnix == "" {
		return cmdutil.UsageError(errors.New("--refusals is the egress proxy's file: give --egress-unix PATH too"))
	}
	policy, err := gatewayEgress(s, fl)
	if err != nil {
		return err
	}
	env := map[string]string{}
	gw, err := s.modelGateway(env)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	defer gw.Close()
	if _, err := gw.Grant("watcher", token); err != nil {
		return cmdutil.UsageError(fmt.Errorf("%s: %w", GatewayTokenEnv, err))
	}
	var where []string
	if tcp {
		got, err := gw.Listen(fl.addr)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		where = append(where, fmt.Sprintf("http://<this host>:%d%s", got.Port, gw.Path()))
	}
	sockets := map[string]http.Handler{}
	if fl.unix != "" {
		sockets[fl.unix] = gw
		where = append(where, fmt.Sprintf("unix:%s (path %s)", fl.unix, gw.Path()))
	}
	if fl.egressUnix != "" {
		opts := egress.Options{Policy: policy, Logger: logger}
		if w := refusalsFile(fl, logger); w != nil {
			defer w.Close()
			opts.OnRefuse = w.Add
		}
		sockets[fl.egressUnix] = egress.New(opts)
	}
	for path, h := range sockets {
		srv, err := serveUnix(path, h, logger)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		defer func() {
			_ = srv.Close()
			_ = os.Remove(path)
		}()
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The watcher reaches only this URL, from which neither the wire API
	// nor the provider's profile can be told: they are printed for its
	// settings.
	fmt.Fprintf(f.IO.Err, "model gateway on %v: the watcher's OPENAI_BASE_URL reaches it with %s=%s and %s=%s\n",
		where, "CODEAGENT_API", env["CODEAGENT_API"], config.EnvCompat, env[config.EnvCompat])
	if fl.egressUnix != "" {
		fmt.Fprintf(f.IO.Err, "egress proxy on unix:%s admitting %v\n", fl.egressUnix, policy.Entries())
	}
	<-ctx.Done()
	return nil
}

// gatewayEgress is the allow-list of the egress proxy. An allow-list with
// no proxy to enforce it, or `egress: open` with one, is refused: either
// would leave the watcher's network other than the user believes.
func gatewayEgress(s *session, fl gatewayFlags) (*egress.Policy, error) {
	p, err := s.egressPolicy()
	if err != nil {
		return nil, err
	}
	switch {
	case fl.egressUnix == "" && len(s.cfg.Egress) > 0 && !p.IsOpen():
		return nil, cmdutil.UsageError(fmt.Errorf("egress %v is set but --egress-unix is not: the allow-list is enforced by the egress proxy, so give --egress-unix PATH (and the watcher no network), or unset egress",
			p.Entries()))
	case fl.egressUnix != "" && p.IsOpen():
		return nil, cmdutil.UsageError(errors.New("egress: open has no proxy: drop --egress-unix and give the watcher an open network (compose: docker/compose.open.yml, docs/gateway.md)"))
	}
	return p, nil
}

// refusalsFile opens the file of --refusals; nil without it. A file that
// cannot be written is a warning, not a stop: the model gateway and the
// proxy serve on, and the refusals are in the log.
func refusalsFile(fl gatewayFlags, log *slog.Logger) *refusals.Writer {
	if fl.refusals == "" {
		return nil
	}
	w, err := refusals.Create(fl.refusals, 0, log)
	if err != nil {
		log.Warn("refusals go to this log only, not to a file planagent runs follow", "err", err,
			"fix", "create the directory of --refusals owned by the gateway's user (compose: mkdir -p volumes/egress)")
		return nil
	}
	return w
}

// serveUnix serves h on a unix socket at path. A socket left there by a
// gateway that did not stop cleanly (a container killed) is replaced;
// anything else at path is not touched.
func serveUnix(path string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("listen on %s: a file that is not a socket is there: remove it or name another path", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("listen on %s: remove the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is the directory there and writable by this user?)", path, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("a socket stopped serving", "socket", path, "err", err)
		}
	}()
	return srv, nil
}
