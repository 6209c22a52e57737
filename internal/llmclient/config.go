package llmclient

import (
	"net/http"
	"time"
)

// Config configures a Client. Zero values take the defaults named on each field.
type Config struct {
	BaseURL        string        // default https://api.openai.com/v1
	APIKey         string        // required at the first call; never logged
	Model          string        // default model of requests that name none
	RequestTimeout time.Duration // per attempt, whole request incl. stream (default 10m)
	IdleTimeout    time.Duration // max silence between stream chunks and between reads of any answer's body (default 90s)
	MaxRetries     int           // retries after the first attempt on 429/5xx/connection errors
	// DownGrace keeps trying a server that refuses connections (nothing
	// listens: a dial failure) or closes one under a request, past
	// MaxRetries, until this long has passed since the first such failure
	// in a row; 0: such failures count as any other. An attempt's agent sets it when its server is planagent's
	// model gateway, which is down while planagent restarts.
	DownGrace   time.Duration
	MaxTokens   int           // reserved output tokens sent as max_(completion_)tokens; 0 = not sent
	BackoffBase time.Duration // first backoff (default 1s), doubling per retry; tests set it small
	BackoffMax  time.Duration // cap of one backoff (default 30s)
	HTTPClient  *http.Client  // optional; its Timeout should be 0 (it would cut long streams)
	// API is the wire dialect: "chat", "anthropic", "responses", or ""
	// (or "auto") to choose from BaseURL and Model (ResolveAPI).
	API string
	// ReasoningEffort is how hard a reasoning model thinks ("": the
	// model's default): reasoning_effort on Chat Completions (through the
	// profile), reasoning.effort on the Responses API, and on Anthropic's
	// API a thinking budget unless ThinkingBudget sets one (thinkingBudget).
	ReasoningEffort string
	// ThinkingBudget turns on Anthropic extended thinking with this many
	// budget tokens (0: from ReasoningEffort, else off); the other
	// dialects ignore it.
	ThinkingBudget int
	// NoPromptCache leaves out the Anthropic cache breakpoints (the
	// caching benchmark's baseline); the other dialects ignore it.
	NoPromptCache bool
	// Compat overrides the provider profile picked from BaseURL, field by
	// field (keys: CompatKeys; "profile" forces one by name). New takes an
	// invalid map as no override; config validates it before.
	Compat map[string]string
	// OnRetry, when set, hears about each retry before its backoff, so that
	// callers can log or emit an event; the library itself prints nothing.
	OnRetry func(attempt int, wait time.Duration, err error)
	// Anthropic builds the dialect of Anthropic's Messages API
	// (anthropicmsg.New) for a client whose API resolves to anthropic; nil:
	// such a client fails every call saying so. A field rather than an
	// import, so that a client for the other APIs does not link the SDK.
	// It is given the configuration with New's defaults filled in.
	Anthropic func(cfg Config, doer HTTPDoer) Dialect
}
