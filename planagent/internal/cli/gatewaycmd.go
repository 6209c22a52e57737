package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
)

// GatewayTokenEnv holds the token a watcher that planagent does not start
// (the compose service) presents to `planagent gateway`.
const GatewayTokenEnv = "CODEAGENT_GATEWAY_TOKEN"

// NewCmdGateway builds `planagent gateway`: the model gateway as a service
// of its own, for the compose file's codingagent watcher, so that the
// provider's key is in the gateway's service and not in the watcher's.
func NewCmdGateway(f *cmdutil.Factory) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the model API to a codingagent watcher without giving it the key",
		Long: `Serve the model API (the configured base_url, api and key) to a codingagent
watcher that planagent does not start, such as the compose file's: the watcher
gets ` + GatewayTokenEnv + ` as its OPENAI_API_KEY and this gateway as its
OPENAI_BASE_URL; the gateway checks the token, puts the real key in its place
and forwards each request. The key stays in this process. Stop it with Ctrl-C
or SIGTERM. See docs/gateway.md.`,
		Example: `  export ` + GatewayTokenEnv + `=$(openssl rand -hex 32)
  planagent gateway --addr 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGateway(cmd, f, addr) },
	}
	cmd.Flags().StringVar(&addr, "addr", "0.0.0.0:8080", "host:port to listen on")
	return cmd
}

func runGateway(cmd *cobra.Command, f *cmdutil.Factory, addr string) error {
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	s := &session{f: f, cfg: l.Config, logger: slog.New(slog.NewTextHandler(f.IO.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if s.cfg.APIKey == "" {
		return cmdutil.UsageError(llm.ErrNoAPIKey)
	}
	token := f.Getenv(GatewayTokenEnv)
	if token == "" {
		return cmdutil.UsageError(fmt.Errorf("%s is not set: set it to a random token (export %s=$(openssl rand -hex 32)) and give the watcher the same as its OPENAI_API_KEY",
			GatewayTokenEnv, GatewayTokenEnv))
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
	got, err := gw.Listen(addr)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The watcher reaches only this URL, from which neither the wire API
	// nor the provider's profile can be told: they are printed for its
	// settings.
	fmt.Fprintf(f.IO.Err, "model gateway on %s: the watcher's OPENAI_BASE_URL is http://<this host>:%d%s with %s=%s and %s=%s\n",
		got, got.Port, gw.Path(), "CODEAGENT_API", env["CODEAGENT_API"], config.EnvCompat, env[config.EnvCompat])
	<-ctx.Done()
	return nil
}
