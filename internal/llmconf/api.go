// Package llmconf holds what configures an LLM client without being one:
// the wire dialects and how "auto" picks one, the provider profiles and
// their compat overrides, the default retries. The configuration checks
// and prints these; linking the client (its SDKs, OpenTelemetry) for that
// is what this package is there to avoid.
package llmconf

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultMaxRetries is a sensible Config.MaxRetries for callers that have
// no setting of their own (zero means no retries). With the default
// backoff (1s doubling to 30s, each wait drawn from its upper half) six
// retries wait 30.5-61s in all: a provider blip of tens of seconds is
// survived, as the big clients' schedules survive it.
const DefaultMaxRetries = 6

// The wire dialects a client speaks (llmclient.Config.API).
const (
	APIAuto      = "auto"      // choose from the base URL and model (ResolveAPI)
	APIChat      = "chat"      // OpenAI Chat Completions through go-openai
	APIAnthropic = "anthropic" // Anthropic Messages API through its official SDK
	APIResponses = "responses" // OpenAI Responses API, stateless
)

// APIs lists the values llmclient.Config.API takes, for messages and validation.
var APIs = []string{APIAuto, APIChat, APIAnthropic, APIResponses}

// ResolveAPI says which dialect a client with these settings speaks, and
// why. api "" or "auto" chooses only where it is certain: Anthropic's own
// host speaks Messages; OpenAI serves its *-codex models only on the
// Responses API ("unsupported_api_for_model" on chat). Everything else is
// Chat Completions, which every OpenAI-compatible server speaks.
func ResolveAPI(api, baseURL, model string) (resolved, why string, err error) {
	switch api {
	case APIChat, APIAnthropic, APIResponses:
		return api, "set", nil
	case "", APIAuto:
	default:
		return "", "", fmt.Errorf("unknown api %q: want one of %s", api, strings.Join(APIs, ", "))
	}
	host := ""
	if u, err := url.Parse(baseURL); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	switch {
	case host == "api.anthropic.com":
		return APIAnthropic, "auto: base_url host is api.anthropic.com", nil
	case host == "api.openai.com" && strings.Contains(strings.ToLower(model), "codex"):
		return APIResponses, fmt.Sprintf("auto: OpenAI serves %s only on the Responses API", model), nil
	}
	return APIChat, "auto: the OpenAI-compatible default", nil
}
