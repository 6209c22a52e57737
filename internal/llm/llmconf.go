package llm

import "github.com/codeagent/codeagent/internal/llmconf"

// What configures a client lives in llmconf, which the configuration
// imports without linking the client; these names keep the client's
// callers and code in the client's terms.

// DefaultMaxRetries is llmconf.DefaultMaxRetries.
const DefaultMaxRetries = llmconf.DefaultMaxRetries

// The wire dialects a Client speaks (Config.API).
const (
	APIAuto      = llmconf.APIAuto
	APIChat      = llmconf.APIChat
	APIAnthropic = llmconf.APIAnthropic
	APIResponses = llmconf.APIResponses
)

// APIs lists the values Config.API takes.
var APIs = llmconf.APIs

// ResolveAPI says which dialect a client with these settings speaks, and why.
func ResolveAPI(api, baseURL, model string) (resolved, why string, err error) {
	return llmconf.ResolveAPI(api, baseURL, model)
}

// Profile is what one Chat Completions server accepts (llmconf.Profile).
type Profile = llmconf.Profile

// ProfileField is one field of a resolved profile.
type ProfileField = llmconf.ProfileField

// The values of Profile.Reasoning and Profile.ToolCallIDs.
const (
	ReasoningNone       = llmconf.ReasoningNone
	ReasoningContent    = llmconf.ReasoningContent
	ReasoningOpenRouter = llmconf.ReasoningOpenRouter
	ReasoningEcho       = llmconf.ReasoningEcho
	IDsAny              = llmconf.IDsAny
	IDsAlnum9           = llmconf.IDsAlnum9
)

// CompatProfileKey forces a profile by name, whatever the host.
const CompatProfileKey = llmconf.CompatProfileKey

// ProfileNames lists the known profiles, sorted.
func ProfileNames() []string { return llmconf.ProfileNames() }

// NamedProfile is the profile called name, before any override.
func NamedProfile(name string) (Profile, bool) { return llmconf.NamedProfile(name) }

// CompatKeys lists the keys a `compat:` map may hold.
func CompatKeys() []string { return llmconf.CompatKeys() }

// ResolveProfile is the profile for baseURL with the reasoning_effort
// setting and compat's overrides, and where each field came from.
func ResolveProfile(baseURL string, compat map[string]string, effort string) (Profile, []ProfileField, error) {
	return llmconf.ResolveProfile(baseURL, compat, effort)
}
