// Package tokens holds the token usage of LLM calls. It is a leaf so that
// what records and shows usage (the run record, the run view, the web view)
// does not link the LLM client and the SDKs behind it.
package tokens

// Usage is token usage. Estimated is set when the server sent none and the
// figures are a chars/4 estimate. Prompt counts every prompt token, those
// read from the cache (Cached) and written to it (CacheWrite) included, as
// OpenAI reports them: a price applies to Prompt-Cached-CacheWrite, never
// to a cached token twice.
type Usage struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Cached     int  `json:"cached,omitempty"`
	CacheWrite int  `json:"cache_write,omitempty"` // written to the prompt cache (Anthropic)
	Estimated  bool `json:"estimated,omitempty"`
	// CostUSD is what the server said the call cost (OpenRouter's
	// usage.cost, LiteLLM's x-litellm-response-cost); 0 when it said nothing.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Add sums o into u.
func (u *Usage) Add(o Usage) {
	u.Prompt += o.Prompt
	u.Completion += o.Completion
	u.Cached += o.Cached
	u.CacheWrite += o.CacheWrite
	u.CostUSD += o.CostUSD
	u.Estimated = u.Estimated || o.Estimated
}
