// Package probe asks a local model server what context window it really
// serves, before a run relies on the configured one: Ollama's /v1 cuts
// every prompt to its default window (4096 tokens on most machines) with
// only a log line, and llama.cpp shares its context among --parallel slots.
// A server that answers none of the probes (a remote API) is left alone.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Server kinds, as messages name them.
const (
	Ollama   = "Ollama"
	VLLM     = "vLLM"
	LlamaCPP = "llama.cpp"
	LMStudio = "LM Studio"
)

// Window is what a server says about the model it serves.
type Window struct {
	Server  string // Ollama, vLLM, llama.cpp, LM Studio
	URL     string // the server's root, for messages
	Model   string
	Context int // tokens one request may use
	Max     int // the model's own maximum when the server tells it; 0 otherwise
	Slots   int // llama.cpp: the slots sharing the context
	// Loaded is false when the figure is the model's maximum because the
	// server has not loaded it yet (LM Studio loads on first use).
	Loaded bool
}

// Options say where and how to probe.
type Options struct {
	BaseURL string // the OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1
	Model   string
	APIKey  string       // sent as a bearer token: vLLM and LM Studio may require it
	Client  *http.Client // nil: a plain client
	// Timeout bounds each probe request (default 3s); loading an Ollama
	// model to read its window may take LoadTimeout (default 2m).
	Timeout     time.Duration
	LoadTimeout time.Duration
}

// Probe asks the server at opts.BaseURL, trying each kind's own endpoint;
// nil when none answers like one (a remote API, or an unknown server).
func Probe(ctx context.Context, opts Options) *Window {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Second
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = 2 * time.Minute
	}
	p := prober{opts: opts, root: root(opts.BaseURL), base: strings.TrimRight(opts.BaseURL, "/")}
	for _, f := range []func(context.Context) *Window{p.ollama, p.llamaCPP, p.lmStudio, p.vllm} {
		if ctx.Err() != nil {
			return nil
		}
		if w := f(ctx); w != nil {
			w.URL = p.root
			if w.Model == "" {
				w.Model = opts.Model
			}
			return w
		}
	}
	return nil
}

// root is the base URL without its OpenAI path (/v1), where the servers'
// own endpoints live.
func root(base string) string {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return strings.TrimRight(base, "/")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return strings.TrimRight(u.String(), "/")
}

type prober struct {
	opts       Options
	root, base string
}

// call sends one probe and decodes a 200 JSON answer into out; false for
// anything else (not that server).
func (p prober) call(ctx context.Context, method, u string, body any, timeout time.Duration, out any) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return false
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
	resp, err := p.opts.Client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return true
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(out) == nil
}

// ollama reads the loaded context from /api/ps (loading the model first
// when it is not: the window is only known once loaded, and the run's
// first request would load it anyway) and the model's maximum from
// /api/show.
func (p prober) ollama(ctx context.Context) *Window {
	var show struct {
		ModelInfo  map[string]any `json:"model_info"`
		Parameters string         `json:"parameters"`
	}
	if !p.call(ctx, http.MethodPost, p.root+"/api/show", map[string]string{"model": p.opts.Model}, p.opts.Timeout, &show) || show.ModelInfo == nil {
		return nil
	}
	w := &Window{Server: Ollama, Max: ollamaMax(show.ModelInfo)}
	served := func() bool {
		var ps struct {
			Models []struct {
				Name          string `json:"name"`
				Model         string `json:"model"`
				ContextLength int    `json:"context_length"`
			} `json:"models"`
		}
		if !p.call(ctx, http.MethodGet, p.root+"/api/ps", nil, p.opts.Timeout, &ps) {
			return false
		}
		for _, m := range ps.Models {
			if (sameOllamaModel(m.Name, p.opts.Model) || sameOllamaModel(m.Model, p.opts.Model)) && m.ContextLength > 0 {
				w.Context, w.Loaded = m.ContextLength, true
				return true
			}
		}
		return false
	}
	if served() {
		return w
	}
	// An empty generate request loads the model with the server's
	// defaults, as /v1 would.
	if p.call(ctx, http.MethodPost, p.root+"/api/generate", map[string]any{"model": p.opts.Model, "keep_alive": "10m"}, p.opts.LoadTimeout, nil) && served() {
		return w
	}
	return nil // an Ollama too old to say its loaded window: nothing to check
}

// sameOllamaModel compares names the way Ollama resolves them: "qwen3" is
// "qwen3:latest".
func sameOllamaModel(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s, ":") {
			s += ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

// ollamaMax is model_info's "<architecture>.context_length".
func ollamaMax(info map[string]any) int {
	arch, _ := info["general.architecture"].(string)
	if v, ok := info[arch+".context_length"].(float64); ok && arch != "" {
		return int(v)
	}
	for k, v := range info {
		if f, ok := v.(float64); ok && strings.HasSuffix(k, ".context_length") {
			return int(f)
		}
	}
	return 0
}

// llamaCPP reads /props: default_generation_settings.n_ctx is one slot's
// context (llama-server gives each of its --parallel slots n_ctx/parallel,
// and /props reports slot 0's), total_slots how many share it.
func (p prober) llamaCPP(ctx context.Context) *Window {
	var props struct {
		Settings *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx       int    `json:"n_ctx"` // not sent by current servers: the whole context
		TotalSlots int    `json:"total_slots"`
		ModelPath  string `json:"model_path"`
	}
	if !p.call(ctx, http.MethodGet, p.root+"/props", nil, p.opts.Timeout, &props) {
		return nil
	}
	slots := max(props.TotalSlots, 1)
	w := &Window{Server: LlamaCPP, Slots: slots, Loaded: true}
	switch {
	case props.Settings != nil && props.Settings.NCtx > 0:
		w.Context = props.Settings.NCtx
	case props.NCtx > 0:
		w.Context = props.NCtx / slots
	default:
		return nil
	}
	return w
}

// lmStudio reads /api/v1/models: a loaded instance's context_length, else
// the model's max_context_length. LM Studio may answer 200 with an error
// body, which has no models and so is not taken for an answer.
func (p prober) lmStudio(ctx context.Context) *Window {
	var list struct {
		Models []struct {
			Key              string `json:"key"`
			MaxContextLength int    `json:"max_context_length"`
			LoadedInstances  []struct {
				ID     string `json:"id"`
				Config struct {
					ContextLength int `json:"context_length"`
				} `json:"config"`
			} `json:"loaded_instances"`
		} `json:"models"`
	}
	if !p.call(ctx, http.MethodGet, p.root+"/api/v1/models", nil, p.opts.Timeout, &list) {
		return nil
	}
	for _, m := range list.Models {
		match := m.Key == p.opts.Model
		for _, in := range m.LoadedInstances {
			match = match || in.ID == p.opts.Model
		}
		if !match {
			continue
		}
		w := &Window{Server: LMStudio, Model: m.Key, Max: m.MaxContextLength, Context: m.MaxContextLength}
		for _, in := range m.LoadedInstances {
			if in.Config.ContextLength > 0 {
				w.Context, w.Loaded = in.Config.ContextLength, true
				break
			}
		}
		if w.Context > 0 {
			return w
		}
	}
	return nil
}

// vllm reads max_model_len from the OpenAI model list, a field only vLLM
// (and servers built on it) adds.
func (p prober) vllm(ctx context.Context) *Window {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if !p.call(ctx, http.MethodGet, p.base+"/models", nil, p.opts.Timeout, &list) {
		return nil
	}
	for _, m := range list.Data {
		if m.MaxModelLen > 0 && (m.ID == p.opts.Model || len(list.Data) == 1) {
			return &Window{Server: VLLM, Model: m.ID, Context: m.MaxModelLen, Loaded: true}
		}
	}
	return nil
}

// Need is what the agent's first request takes: the system prompt with the
// tool definitions (FirstPromptTokens), the repo map's budget, and the
// output kept free for the answer.
type Need struct {
	RepoMap        int
	ReservedOutput int
}

// FirstPromptTokens estimates the agent's system prompt and tool
// definitions: a one-line task's first request measured 2.4k tokens by
// chars/4 (codingagent exec against the test server); rounded up.
const FirstPromptTokens = 3000

// Tokens is the whole need.
func (n Need) Tokens() int { return FirstPromptTokens + n.RepoMap + n.ReservedOutput }

// TooSmall is a served window smaller than the first request needs.
type TooSmall struct {
	Window Window
	Need   Need
}

// Check is nil when w serves what n needs.
func Check(w *Window, n Need) error {
	if w == nil || w.Context >= n.Tokens() {
		return nil
	}
	return &TooSmall{Window: *w, Need: n}
}

func (e *TooSmall) Error() string {
	w, need := e.Window, e.Need.Tokens()
	what := fmt.Sprintf("a %d-token context", w.Context)
	if w.Slots > 1 {
		what = fmt.Sprintf("a %d-token context per slot (%d slots share it)", w.Context, w.Slots)
	}
	return fmt.Sprintf("%s at %s serves %s with %s, but the agent's first request needs about %d "+
		"(system prompt and tools ~%d + repo_map_tokens %d + reserved_output %d): %s",
		w.Server, w.URL, w.Model, what, need, FirstPromptTokens, e.Need.RepoMap, e.Need.ReservedOutput, e.fix())
}

// suggest is a window worth asking for: the need rounded up to a power of
// two, at least 65536 (Ollama's docs ask at least 64000 for coding tools:
// the history grows past the first request), within the model's maximum
// when known.
func (e *TooSmall) suggest() int {
	n := 65536
	for n < e.Need.Tokens() {
		n *= 2
	}
	if m := e.Window.Max; m > 0 && n > m {
		n = m
	}
	return n
}

func (e *TooSmall) fix() string {
	w, n := e.Window, e.suggest()
	if w.Max > 0 && w.Max < e.Need.Tokens() {
		return fmt.Sprintf("the model's own maximum is %d tokens: use a model with a larger context, or lower reserved_output and repo_map_tokens", w.Max)
	}
	switch w.Server {
	case Ollama:
		return fmt.Sprintf("restart Ollama with OLLAMA_CONTEXT_LENGTH=%d (its /v1 ignores num_ctx and cuts longer prompts), or create a model with PARAMETER num_ctx %d", n, n)
	case LlamaCPP:
		if w.Slots > 1 {
			return fmt.Sprintf("start llama-server with -c %d --parallel %d (or --parallel 1 -c %d): its context is divided among the slots", n*w.Slots, w.Slots, n)
		}
		return fmt.Sprintf("start llama-server with -c %d", n)
	case VLLM:
		return fmt.Sprintf("start vLLM with --max-model-len %d", n)
	case LMStudio:
		return fmt.Sprintf("load the model with a larger context, e.g. lms load %s --context-length %d", w.Model, n)
	}
	return fmt.Sprintf("give the server a context of at least %d tokens", n)
}
