package cmdutil

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
)

// Factory builds what commands need, lazily, so `--help` never needs an API
// key or a config file.
type Factory struct {
	IO     IOStreams
	Getenv func(string) string
	// Executable is the running program's path (the local runtime finds
	// codingagent next to it).
	Executable string
	// Traces installs the program's tracer provider and returns what
	// flushes it at exit (export.Setup, set by each program's Main); nil:
	// no traces. A field rather than an import, so that this package, and
	// every test binary that links it, does not link the OTLP exporter, the
	// SDK and the gRPC and protobuf packages they bring.
	Traces func(ctx context.Context, service string) (shutdown func(context.Context) error, err error)
	// keyErr is a failure to read the key from KeyFDEnv's descriptor,
	// reported by Config.
	keyErr error
}

// NewFactory returns a factory over the process environment. A key handed
// over on a file descriptor (KeyFDEnv) is read here, once, before anything
// can start a child.
func NewFactory() *Factory {
	exe, _ := os.Executable()
	key, err := readKeyFD(os.Getenv)
	return &Factory{IO: System(), Getenv: withKey(os.Getenv, key), Executable: exe, keyErr: err}
}

// AddConfigFlags adds the flags every command shares: --config, and the
// settings of the model and the volumes (from the config table).
func AddConfigFlags(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.String("config", "", "config file (default ./codeagent.yaml)")
	SettingFlags(pf, "model", "base_url", "api", "reasoning_effort", "thinking_budget", "volumes_dir", "workspace_dir")
}

// SettingFlags defines the flags of the settings keys on fs from the config
// table (config.AddFlags): a setting's flag name, help and default are
// written there once. A key the table does not know is a bug in the
// command naming it: it panics, in every test that builds the command.
func SettingFlags(fs *pflag.FlagSet, keys ...string) {
	if err := config.AddFlags(fs, keys...); err != nil {
		panic(err)
	}
}

// KeptSettingFlags is SettingFlags for flags that, not given, keep a value
// of their own that kept names (config.AddFlagsKept).
func KeptSettingFlags(fs *pflag.FlagSet, kept string, keys ...string) {
	if err := config.AddFlagsKept(fs, kept, keys...); err != nil {
		panic(err)
	}
}

// Config loads the effective configuration for cmd (flags > env > file > defaults).
func (f *Factory) Config(cmd *cobra.Command) (*config.Loaded, error) {
	if f.keyErr != nil {
		return nil, UsageError(f.keyErr)
	}
	file, _ := cmd.Flags().GetString("config")
	l, err := config.Load(config.Options{File: file, Flags: cmd.Flags(), Getenv: f.Getenv})
	if err != nil {
		return nil, UsageError(fmt.Errorf("configuration: %w", err))
	}
	// In a compose container this machine's loopback is the container's own:
	// the host's is reached under another name.
	if host := f.Getenv(config.LoopbackHostEnv); host != "" {
		if u, ok := config.RewriteLoopback(l.BaseURL, host); ok {
			l.BaseURL = u
			l.Warnings = append(l.Warnings, fmt.Sprintf("OPENAI_BASE_URL points at the loopback; in this container it is reached as %s (%s), so the server must listen on the docker bridge too (e.g. 0.0.0.0)", host, config.LoopbackHostEnv))
		}
	}
	return l, nil
}

// LLM builds the LLM client for cfg. A missing key surfaces at the first call.
func (f *Factory) LLM(cfg config.Config) *llmclient.Client {
	return f.LLMWithRetries(cfg, nil)
}

// LLMWithRetries is LLM with onRetry told about every retry before its
// wait, so a command can show why nothing happens for a while (a 429's
// Retry-After may be minutes).
func (f *Factory) LLMWithRetries(cfg config.Config, onRetry func(attempt int, wait time.Duration, err error)) *llmclient.Client {
	grace, _ := time.ParseDuration(f.Getenv(config.ModelDownGraceEnv)) // set by planagent, not by people
	return llmclient.New(llmclient.Config{
		DownGrace:       max(grace, 0),
		BaseURL:         cfg.BaseURL,
		API:             cfg.API,
		Anthropic:       anthropicmsg.New,
		APIKey:          cfg.APIKey,
		Model:           cfg.Model,
		RequestTimeout:  cfg.RequestTimeout,
		MaxRetries:      cfg.Retries,
		MaxTokens:       cfg.ReservedOutput,
		Compat:          cfg.Compat,
		ReasoningEffort: cfg.ReasoningEffort,
		ThinkingBudget:  cfg.ThinkingBudget,
		OnRetry:         onRetry,
	})
}

// RetryText is the line a command shows when an LLM request is retried.
func RetryText(attempt, retries int, wait time.Duration, err error) string {
	step := 100 * time.Millisecond
	if wait < time.Second {
		step = time.Millisecond
	}
	return fmt.Sprintf("model request failed (%v); retry %d of %d in %s", err, attempt, retries, wait.Round(step))
}
