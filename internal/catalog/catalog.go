// Package catalog knows models the configuration does not describe: their
// context window, maximum output, reasoning support and prices (cached
// input and cache write included), from the offline catalog embedded in
// charm.land/catwalk (MIT, github.com/charmbracelet/catwalk). Nothing is
// fetched: a run behaves the same on a machine without network.
package catalog

import (
	"net"
	"net/url"
	"strings"

	"charm.land/catwalk/pkg/catwalk"
	"charm.land/catwalk/pkg/embedded"
)

// Version is the catwalk release the catalog comes from, for the config
// display: the figures are as of that release.
const Version = "catwalk v0.52.1"

// Price is USD per million tokens.
type Price struct {
	Input       float64 // uncached prompt tokens
	Output      float64 // completion tokens
	CachedInput float64 // prompt tokens read from the provider's cache
	CacheWrite  float64 // prompt tokens written to the cache (Anthropic bills 1.25× input)
}

// Model is what the catalog says about one model of one provider.
type Model struct {
	Provider      string // catwalk's provider id, e.g. "openai", "openrouter"
	ID            string // the model id as the provider names it
	ContextWindow int    // tokens
	MaxOutput     int    // tokens; 0 when not known
	Reasoning     bool
	Price         Price
	Priced        bool // the catalog has a price (local and free models have none)
}

// Name is "<provider>/<model>", how the config display names the entry.
func (m Model) Name() string { return m.Provider + "/" + m.ID }

// hostOf maps the providers whose endpoint is an environment variable in
// catwalk to the host of their public API.
var endpointHosts = map[string]string{
	"openai":    "api.openai.com",
	"anthropic": "api.anthropic.com",
	"gemini":    "generativelanguage.googleapis.com",
}

// firstParty is the order in which providers are searched when the base
// URL names none of them (a gateway such as LiteLLM): the model makers
// first, whose prices gateways pass on, then the aggregators.
var firstParty = []string{"openai", "anthropic", "gemini", "xai", "deepseek", "moonshot", "zai", "mistral",
	"groq", "cerebras", "openrouter", "vercel"}

// Lookup finds model as served at baseURL. A base URL on this machine or a
// private network is a local server (free, and its window is what it
// serves, which the probes read): no entry. A base URL whose host is a
// catalog provider's is looked up there only (another provider's prices
// would be wrong); an unknown host (a gateway) is searched in firstParty
// order, then with a "vendor/" prefix dropped.
func Lookup(baseURL, model string) (Model, bool) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" || model == "" || Local(u.Hostname()) {
		return Model{}, false
	}
	host := strings.ToLower(u.Hostname())
	providers := embedded.GetAll()
	byID := make(map[string]catwalk.Provider, len(providers))
	for _, p := range providers {
		byID[string(p.ID)] = p
	}
	for _, p := range providers {
		if providerHost(p) == host {
			return find(p, model)
		}
	}
	if strings.HasSuffix(host, ".openai.azure.com") {
		return find(byID["azure"], model)
	}
	for _, name := range []string{model, afterSlash(model)} {
		if name == "" {
			continue
		}
		for _, id := range firstParty {
			if m, ok := find(byID[id], name); ok {
				return m, true
			}
		}
	}
	return Model{}, false
}

func afterSlash(model string) string {
	if i := strings.LastIndex(model, "/"); i >= 0 && i+1 < len(model) {
		return model[i+1:]
	}
	return ""
}

func providerHost(p catwalk.Provider) string {
	if h, ok := endpointHosts[string(p.ID)]; ok {
		return h
	}
	u, err := url.Parse(p.APIEndpoint)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func find(p catwalk.Provider, model string) (Model, bool) {
	for _, m := range p.Models {
		if m.ID == model || strings.EqualFold(m.ID, model) {
			return convert(p, m), true
		}
	}
	// An alias as providers take it: the undated name or "-latest" is the
	// newest dated entry ("claude-sonnet-4-5" is claude-sonnet-4-5-20250929).
	base := strings.TrimSuffix(strings.ToLower(model), "-latest")
	var best *catwalk.Model
	for i, m := range p.Models {
		date, ok := strings.CutPrefix(strings.ToLower(m.ID), base+"-")
		if ok && isDate(date) && (best == nil || m.ID > best.ID) {
			best = &p.Models[i]
		}
	}
	if best != nil {
		return convert(p, *best), true
	}
	return Model{}, false
}

// isDate reports whether s is a model id's date suffix: eight digits.
func isDate(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// convert reads catwalk's fields. Its two cache prices are not used the
// same way in every entry: Anthropic's put the cache write (1.25× input)
// in "in cached" and the read (0.1×) in "out cached"; some OpenAI entries
// put the read in "in cached" and leave "out cached" 0. So a cache price
// above the input price is a write, one below it a read; a price the entry
// does not give is the input price (what an unknown one is billed as).
func convert(p catwalk.Provider, m catwalk.Model) Model {
	out := Model{Provider: string(p.ID), ID: m.ID, ContextWindow: int(m.ContextWindow), MaxOutput: int(m.DefaultMaxTokens),
		Reasoning: m.CanReason, Priced: m.CostPer1MIn > 0 || m.CostPer1MOut > 0}
	in := m.CostPer1MIn
	out.Price = Price{Input: in, Output: m.CostPer1MOut, CachedInput: in, CacheWrite: in}
	switch inCached, outCached := m.CostPer1MInCached, m.CostPer1MOutCached; {
	case outCached > 0 && outCached < in:
		out.Price.CachedInput = outCached
	case inCached > 0 && inCached < in:
		out.Price.CachedInput = inCached
	}
	if m.CostPer1MInCached > in {
		out.Price.CacheWrite = m.CostPer1MInCached
	}
	return out
}

// Local reports whether host is this machine, a container host alias or a
// private network: a server run by the user, not a priced API.
func Local(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".local") ||
		strings.HasSuffix(h, ".internal") || !strings.Contains(h, ".") && net.ParseIP(h) == nil {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}

// KnownAPI reports whether baseURL is the API of a provider the catalog
// lists (api.openai.com, openrouter.ai, …): a remote service, which the
// local-server probes leave alone.
func KnownAPI(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if strings.HasSuffix(host, ".openai.azure.com") {
		return true
	}
	for _, p := range embedded.GetAll() {
		if providerHost(p) == host {
			return true
		}
	}
	return false
}
