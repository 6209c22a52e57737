package config

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/llmconf"
)

// The compat key overrides the provider profile that internal/llmclient picks
// from base_url, field by field:
//
//	compat:
//	  profile: deepseek        # force a profile whatever the host
//	  reasoning: none          # e.g. old deepseek-reasoner rejects reasoning_content
//	  stream_options: false
//
// Values are kept as text; llmconf.ResolveProfile checks them (validate).
const (
	keyCompat = "compat"
	// EnvCompat carries the map as key=value,key=value: how planagent
	// hands it to a coding agent, and an override for one command.
	EnvCompat = "CODEAGENT_COMPAT"
)

func (st *state) applyCompatNode(v *yaml.Node, o origin) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.MappingNode {
		st.errs = append(st.errs, &Error{Where: o.where(), Key: keyCompat,
			Msg: fmt.Sprintf("want a mapping of compat key to value (keys: %s), got %s", strings.Join(llmconf.CompatKeys(), ", "), describe(v))})
		return
	}
	compat := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], resolve(v.Content[i+1])
		if k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
			at := o
			at.line = k.Line
			st.errs = append(st.errs, &Error{Where: at.where(), Key: keyCompat, Msg: fmt.Sprintf("%s: want a single value", k.Value)})
			continue
		}
		compat[k.Value] = val.Value
	}
	st.cfg.Compat = compat
	st.origins[keyCompat] = o
}

func (st *state) applyCompatEnv(getenv func(string) string) {
	raw := strings.TrimSpace(getenv(EnvCompat))
	if raw == "" {
		return
	}
	o := origin{kind: fromEnv, name: EnvCompat}
	compat, err := ParseCompat(raw)
	if err != nil {
		st.errs = append(st.errs, &Error{Where: o.where(), Key: keyCompat, Msg: err.Error()})
		return
	}
	st.cfg.Compat = compat
	st.origins[keyCompat] = o
}

// ParseCompat reads "key=value,key=value".
func ParseCompat(raw string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(raw, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("want key=value pairs separated by commas, e.g. reasoning=none,stream_options=false; got %q", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// FormatCompat writes the map as ParseCompat reads it, keys sorted.
func FormatCompat(c map[string]string) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c[k]
	}
	return strings.Join(parts, ",")
}

// Profile is the provider profile the LLM client will use, and where each
// of its fields came from.
func (c Config) Profile() (llmconf.Profile, []llmconf.ProfileField, error) {
	return llmconf.ResolveProfile(c.BaseURL, c.Compat, c.ReasoningEffort)
}
