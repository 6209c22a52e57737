package cli

import (
	"fmt"
	"maps"
	"net/url"
	"strings"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
)

// anthropicDefault is where the anthropic api goes when base_url still
// names OpenAI's default host (internal/llmclient/anthropicmsg's
// anthropicURL decides the same for a client that holds the key itself).
const anthropicDefault = "https://api.anthropic.com/v1"

// modelGateway is the run's model gateway for the docker and local
// runtimes, with env (the agents' settings) made to go with it: without the
// key, and with the wire API and the provider profile pinned to what the
// real base URL decides, since the agents see only the gateway's URL,
// from which neither could be told. nil (env unchanged) without a key.
func (s *session) modelGateway(env map[string]string) (*gateway.Gateway, error) {
	if s.cfg.APIKey == "" {
		return nil, nil
	}
	api, _, err := llm.ResolveAPI(s.cfg.API, s.cfg.BaseURL, s.cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	profile, _, err := llm.ResolveProfile(s.cfg.BaseURL, s.cfg.Compat, "")
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	gw, err := gateway.New(gateway.Options{Upstream: gatewayUpstream(api, s.cfg.BaseURL), Key: s.cfg.APIKey, Logger: s.logger})
	if err != nil {
		return nil, err
	}
	delete(env, config.APIKeyEnv)
	delete(env, config.AnthropicKeyEnv)
	env["CODEAGENT_API"] = api
	compat := maps.Clone(s.cfg.Compat)
	if compat == nil {
		compat = map[string]string{}
	}
	compat[llm.CompatProfileKey] = profile.Name
	env[config.EnvCompat] = config.FormatCompat(compat)
	s.gateway = gw
	return gw, nil
}

// gatewayUpstream is where the agents' client would have sent api's
// requests for base.
func gatewayUpstream(api, base string) string {
	if u, err := url.Parse(base); api == llm.APIAnthropic && err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return anthropicDefault
	}
	return base
}

// meterOption is the orchestrator's Meter: the run's gateway, or none (a
// nil *Gateway is no nil interface).
func (s *session) meterOption() orchestrator.Meter {
	if s.gateway == nil {
		return nil
	}
	return s.gateway
}
