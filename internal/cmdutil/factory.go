package cmdutil

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
)

// Factory builds what commands need, lazily, so `--help` never needs an API
// key or a config file.
type Factory struct {
	IO     IOStreams
	Getenv func(string) string
	// Executable is the running program's path (the local runtime finds
	// codingagent next to it).
	Executable string
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

// AddConfigFlags adds the flags every command shares.
func AddConfigFlags(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.String("config", "", "config file (default ./codeagent.yaml)")
	pf.String("model", "", "model name (env OPENAI_MODEL)")
	pf.String("base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (env OPENAI_BASE_URL)")
	pf.String("api", "", "wire API: auto, chat, anthropic or responses (env CODEAGENT_API; default auto: anthropic for api.anthropic.com, responses for OpenAI's *-codex models, else chat)")
	pf.String("reasoning-effort", "", "how hard a reasoning model thinks: none, minimal, low, medium, high or xhigh (env CODEAGENT_REASONING_EFFORT; default: the model's)")
	pf.Int("thinking-budget", 0, "Anthropic extended thinking budget in tokens (env CODEAGENT_THINKING_BUDGET; default 0: from --reasoning-effort, else off)")
	pf.String("volumes", "", "volumes dir holding context/, commands/, reports/, workspace/ (default ./volumes)")
	pf.String("workspace", "", "workspace dir (default <volumes>/workspace)")
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
func (f *Factory) LLM(cfg config.Config) *llm.Client {
	return f.LLMWithRetries(cfg, nil)
}

// LLMWithRetries is LLM with onRetry told about every retry before its
// wait, so a command can show why nothing happens for a while (a 429's
// Retry-After may be minutes).
func (f *Factory) LLMWithRetries(cfg config.Config, onRetry func(attempt int, wait time.Duration, err error)) *llm.Client {
	return llm.New(llm.Config{
		BaseURL:         cfg.BaseURL,
		API:             cfg.API,
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
