package llmconf

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Profile is what one Chat Completions server accepts beyond the common
// core: every OpenAI-compatible provider rejects some part of what another
// requires (PITFALLS.md, "Provider dialects"). A profile is picked from the
// base URL's host and every field can be overridden in the config's
// `compat:` map under the key named on the field.
type Profile struct {
	Name string // "openai", "mistral", …; "default" for an unknown server

	// TokenField is the request field of the output limit (compat
	// token_field): "max_tokens" or "max_completion_tokens" (OpenAI's
	// reasoning models reject max_tokens; older servers know only it).
	TokenField string
	// Temperature says whether a temperature may be sent (compat
	// temperature); OpenAI's reasoning models reject any but the default.
	Temperature bool
	// DeveloperRole keeps the `developer` role (compat developer_role);
	// otherwise developer messages go out as `system`, which every chat
	// template knows.
	DeveloperRole bool
	// ParallelToolCalls sends parallel_tool_calls: true with tools (compat
	// parallel_tool_calls), for servers whose default is one call a turn
	// (llama.cpp); others reject the field on some models.
	ParallelToolCalls bool
	// StreamOptions asks for usage at the end of a stream (compat
	// stream_options); some servers reject the field.
	StreamOptions bool
	// ReasoningEffort is sent as reasoning_effort when not empty (compat
	// reasoning_effort); Efforts are the values the provider documents,
	// against which a configured value is checked (none: anything goes).
	ReasoningEffort string
	Efforts         []string
	// ToolCallIDs is the id format the server accepts (compat
	// tool_call_ids): "any", or "alnum9" (Mistral: exactly nine of
	// [a-zA-Z0-9]); ids of another shape are mapped when sent.
	ToolCallIDs string
	// BridgeToolUser puts an assistant message between a tool result and a
	// following user message (compat bridge_tool_user): Mistral answers 400
	// "Unexpected role 'user' after role 'tool'".
	BridgeToolUser bool
	// Reasoning is how a model's reasoning goes back to it (compat
	// reasoning): "none" (stripped: Groq and old deepseek-reasoner reject
	// it), "reasoning_content" (DeepSeek, Kimi, GLM, xAI, llama.cpp),
	// "openrouter" (`reasoning` plus `reasoning_details` unchanged), or
	// "echo" (an unknown server: what it sent, in the field it sent it,
	// signed reasoning_details included; dropped for the rest of the
	// client's life when the server answers 400 naming the field).
	Reasoning string
	// ReasoningOnToolCalls sends reasoning_content on every assistant
	// message with tool calls, even empty (compat reasoning_on_tool_calls):
	// Kimi and DeepSeek thinking modes answer 400 "Missing
	// `reasoning_content` field" without it.
	ReasoningOnToolCalls bool
	// ThoughtSignatures returns Gemini's
	// extra_content.google.thought_signature on each tool call (compat
	// thought_signatures); Gemini answers 400 on the next turn without it.
	ThoughtSignatures bool
}

// The values of Profile.Reasoning and Profile.ToolCallIDs.
const (
	ReasoningNone       = "none"
	ReasoningContent    = "reasoning_content"
	ReasoningOpenRouter = "openrouter"
	ReasoningEcho       = "echo"
	IDsAny              = "any"
	IDsAlnum9           = "alnum9"
)

// baseProfile is the safe default: what any OpenAI-compatible server
// accepts, nothing sent back that one might reject.
func baseProfile(name string) Profile {
	return Profile{Name: name, TokenField: "max_tokens", Temperature: true, StreamOptions: true,
		Reasoning: ReasoningNone, ToolCallIDs: IDsAny}
}

// profileEntry ties a profile to the hosts (and, for local servers, the
// usual ports) that pick it. Adding a provider is one entry here and one
// case under testdata/replays.
type profileEntry struct {
	hosts []string // exact hosts or, with a leading ".", host suffixes
	ports []string // local servers: default ports on a loopback/private host
	words []string // local servers: a host name containing one (a compose service "ollama")
	edit  func(*Profile)
}

func profileTable() map[string]profileEntry {
	openAI := func(p *Profile) {
		p.TokenField = "max_completion_tokens"
		p.DeveloperRole = true
		p.Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	}
	reasoningBack := func(p *Profile) { p.Reasoning = ReasoningContent }
	thinking := func(p *Profile) { p.Reasoning = ReasoningContent; p.ReasoningOnToolCalls = true }
	return map[string]profileEntry{
		"openai":     {hosts: []string{"api.openai.com"}, edit: openAI},
		"azure":      {hosts: []string{".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com"}, edit: openAI},
		"deepseek":   {hosts: []string{"api.deepseek.com"}, edit: thinking},
		"moonshot":   {hosts: []string{"api.moonshot.ai", "api.moonshot.cn"}, edit: thinking},
		"zai":        {hosts: []string{"api.z.ai", "open.bigmodel.cn"}, edit: reasoningBack},
		"xai":        {hosts: []string{"api.x.ai"}, edit: reasoningBack},
		"groq":       {hosts: []string{"api.groq.com"}, edit: func(p *Profile) { p.TokenField = "max_completion_tokens" }},
		"mistral":    {hosts: []string{"api.mistral.ai", "codestral.mistral.ai"}, edit: func(p *Profile) { p.ToolCallIDs = IDsAlnum9; p.BridgeToolUser = true; p.StreamOptions = false }},
		"openrouter": {hosts: []string{"openrouter.ai"}, edit: func(p *Profile) { p.Reasoning = ReasoningOpenRouter }},
		// Vercel's AI Gateway takes reasoning back as OpenRouter does.
		"vercel":   {hosts: []string{"ai-gateway.vercel.sh"}, edit: func(p *Profile) { p.Reasoning = ReasoningOpenRouter }},
		"together": {hosts: []string{"api.together.xyz", "api.together.ai"}},
		// Hugging Face's router forwards to a provider of the model's suffix
		// (":groq"), some of which reject reasoning sent back: the default.
		"huggingface": {hosts: []string{"router.huggingface.co"}},
		"fireworks":   {hosts: []string{"api.fireworks.ai"}},
		"cerebras":    {hosts: []string{"api.cerebras.ai"}},
		"gemini": {hosts: []string{"generativelanguage.googleapis.com"}, edit: func(p *Profile) {
			p.ThoughtSignatures = true
			p.Efforts = []string{"none", "minimal", "low", "medium", "high"}
		}},
		"ollama":   {ports: []string{"11434"}, words: []string{"ollama"}},
		"vllm":     {ports: []string{"8000"}, words: []string{"vllm"}},
		"llamacpp": {ports: []string{"8080"}, words: []string{"llamacpp", "llama-cpp", "llama-server"}, edit: func(p *Profile) { p.Reasoning = ReasoningContent; p.ParallelToolCalls = true }},
		"lmstudio": {ports: []string{"1234"}, words: []string{"lmstudio", "lm-studio"}},
		"litellm":  {ports: []string{"4000"}, words: []string{"litellm"}},
		// An unknown server gets back what it sent (Avian's Kimi, Snowflake
		// Cortex's Claude with signed thinking want it); one that refuses
		// it answers 400 once and is then sent none (Client.echoOff).
		"default": {edit: func(p *Profile) { p.Reasoning = ReasoningEcho }},
	}
}

// ProfileNames lists the known profiles, sorted.
func ProfileNames() []string {
	var names []string
	for n := range profileTable() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NamedProfile is the profile called name, before any override.
func NamedProfile(name string) (Profile, bool) {
	e, ok := profileTable()[name]
	if !ok {
		return Profile{}, false
	}
	p := baseProfile(name)
	if e.edit != nil {
		e.edit(&p)
	}
	return p, true
}

// detectProfile names the profile of baseURL's host, and why.
func detectProfile(baseURL string) (name, why string) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return "default", "base_url has no host"
	}
	host := strings.ToLower(u.Hostname())
	table := profileTable()
	names := ProfileNames() // a fixed order, so the answer never depends on map order
	for _, n := range names {
		for _, h := range table[n].hosts {
			if host == h || (strings.HasPrefix(h, ".") && strings.HasSuffix(host, h)) {
				return n, "base_url host " + host
			}
		}
	}
	for _, n := range names {
		for _, w := range table[n].words {
			if strings.Contains(host, w) {
				return n, "base_url host " + host
			}
		}
	}
	if local(host) {
		for _, n := range names {
			if slices.Contains(table[n].ports, u.Port()) {
				return n, fmt.Sprintf("local server on port %s", u.Port())
			}
		}
	}
	return "default", "base_url host " + host + " is not a known provider"
}

// local reports whether host is this machine, a private address or a
// single-label name (a compose service): where default ports mean something.
func local(host string) bool {
	if host == "localhost" || host == "host.docker.internal" || !strings.Contains(host, ".") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// ProfileField is one field of a resolved profile, for `config` output.
type ProfileField struct {
	Key    string // the compat key
	Value  string
	Source string // "profile openai", "compat"
}

// CompatProfileKey forces a profile by name, whatever the host.
const CompatProfileKey = "profile"

// compatField ties a compat key to its Profile field.
type compatField struct {
	key string
	get func(*Profile) string
	set func(*Profile, string) error
}

func compatFields() []compatField {
	boolean := func(key string, ptr func(*Profile) *bool) compatField {
		return compatField{key: key,
			get: func(p *Profile) string { return strconv.FormatBool(*ptr(p)) },
			set: func(p *Profile, v string) error {
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					return fmt.Errorf("want true or false, got %q", v)
				}
				*ptr(p) = b
				return nil
			}}
	}
	oneOf := func(key string, ptr func(*Profile) *string, allowed ...string) compatField {
		return compatField{key: key,
			get: func(p *Profile) string { return *ptr(p) },
			set: func(p *Profile, v string) error {
				v = strings.TrimSpace(v)
				if !slices.Contains(allowed, v) {
					return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
				}
				*ptr(p) = v
				return nil
			}}
	}
	return []compatField{
		oneOf("token_field", func(p *Profile) *string { return &p.TokenField }, "max_tokens", "max_completion_tokens"),
		boolean("temperature", func(p *Profile) *bool { return &p.Temperature }),
		boolean("developer_role", func(p *Profile) *bool { return &p.DeveloperRole }),
		boolean("parallel_tool_calls", func(p *Profile) *bool { return &p.ParallelToolCalls }),
		boolean("stream_options", func(p *Profile) *bool { return &p.StreamOptions }),
		{key: compatEffortKey,
			get: func(p *Profile) string { return p.ReasoningEffort },
			set: func(p *Profile, v string) error {
				v = strings.TrimSpace(v)
				if v != "" && len(p.Efforts) > 0 && !slices.Contains(p.Efforts, v) {
					return fmt.Errorf("profile %s documents %s, got %q", p.Name, strings.Join(p.Efforts, ", "), v)
				}
				p.ReasoningEffort = v
				return nil
			}},
		oneOf("tool_call_ids", func(p *Profile) *string { return &p.ToolCallIDs }, IDsAny, IDsAlnum9),
		boolean("bridge_tool_user", func(p *Profile) *bool { return &p.BridgeToolUser }),
		oneOf("reasoning", func(p *Profile) *string { return &p.Reasoning }, ReasoningNone, ReasoningContent, ReasoningOpenRouter, ReasoningEcho),
		boolean("reasoning_on_tool_calls", func(p *Profile) *bool { return &p.ReasoningOnToolCalls }),
		boolean("thought_signatures", func(p *Profile) *bool { return &p.ThoughtSignatures }),
	}
}

// compatEffortKey is the compat key (and the chat wire field) of the effort.
const compatEffortKey = "reasoning_effort"

// CompatKeys lists the keys a `compat:` map may hold.
func CompatKeys() []string {
	keys := []string{CompatProfileKey}
	for _, f := range compatFields() {
		keys = append(keys, f.key)
	}
	return keys
}

// ResolveProfile is the profile for baseURL with the reasoning_effort
// setting (effort, "" for none) and compat's overrides, and where each
// field came from. The setting is the one knob for effort in every
// dialect; compat's reasoning_effort only overrides what goes on this
// server's wire (e.g. "" where the field is refused). An unknown key or a
// bad value is an error naming the key and what it takes.
func ResolveProfile(baseURL string, compat map[string]string, effort string) (Profile, []ProfileField, error) {
	name, why := detectProfile(baseURL)
	src := "profile " + name + " (" + why + ")"
	if forced, ok := compat[CompatProfileKey]; ok {
		forced = strings.TrimSpace(forced)
		if _, known := NamedProfile(forced); !known {
			return Profile{}, nil, fmt.Errorf("compat key profile: unknown profile %q (known: %s)", forced, strings.Join(ProfileNames(), ", "))
		}
		name, src = forced, "profile "+forced+" (compat profile)"
	}
	p, _ := NamedProfile(name)
	fields := compatFields()
	byKey := map[string]compatField{}
	for _, f := range fields {
		byKey[f.key] = f
	}
	var errs []string
	overridden := map[string]bool{}
	keys := make([]string, 0, len(compat))
	for k := range compat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == CompatProfileKey {
			continue
		}
		f, ok := byKey[k]
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown compat key %q (known: %s)", k, strings.Join(CompatKeys(), ", ")))
			continue
		}
		if err := f.set(&p, compat[k]); err != nil {
			errs = append(errs, fmt.Sprintf("compat key %s: %v", k, err))
			continue
		}
		overridden[k] = true
	}
	fromSetting := false
	if effort = strings.TrimSpace(effort); effort != "" && !overridden[compatEffortKey] {
		if err := byKey[compatEffortKey].set(&p, effort); err != nil {
			errs = append(errs, fmt.Sprintf("reasoning_effort: %v", err))
		}
		fromSetting = true
	}
	if len(errs) > 0 {
		return Profile{}, nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	out := []ProfileField{{Key: CompatProfileKey, Value: p.Name, Source: src}}
	for _, f := range fields {
		s := "profile " + p.Name
		switch {
		case overridden[f.key]:
			s = "compat"
		case f.key == compatEffortKey && fromSetting:
			s = "setting reasoning_effort"
		}
		out = append(out, ProfileField{Key: f.key, Value: f.get(&p), Source: s})
	}
	return p, out, nil
}
