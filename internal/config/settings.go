package config

// Setting is one key of the settings table as the documentation shows it.
// The docs generator (internal/docgen) writes docs/configuration.md's table
// from Settings, so the page and the code read one table.
type Setting struct {
	Key string
	// Env is the environment variable that sets the key ("" for the
	// structured keys the environment does not set).
	Env string
	// Flag is the flag's name without "--" as config.AddFlags would define
	// it ("" for keys no flag sets); which commands have it is the
	// commands' business.
	Flag string
	// Default is the default as the flag's help says it ("" for none).
	Default string
	Usage   string
}

// structuredSettings are the keys outside the field table (maps and lists
// the file holds), with the environment variable that sets them where there
// is one. Their parsing lives beside their types; this is only their summary.
func structuredSettings() []Setting {
	return []Setting{
		{Key: keyMCPServers, Env: EnvMCPServers, Usage: "MCP servers whose tools the agent, the planner and the chat get: a map of server name to its command (or url) and options (in the environment the same map as JSON)"},
		{Key: keyMCPReadOnly, Env: EnvMCPReadOnly, Usage: "more MCP tools (mcp__SERVER__TOOL, or a server name for all its tools) that plan mode and the planner may use; comma-separated in the environment"},
		{Key: keyPrices, Usage: "USD per 1M tokens by model: `{MODEL: {input, output, cached_input, cache_write}}`; the catalog's for the models it knows"},
		{Key: keyNotify, Usage: "where to tell a person that a run needs them or ended: a command, a webhook and/or an ntfy topic, and which events"},
		{Key: keyCompat, Env: EnvCompat, Usage: "per-field overrides of the provider profile picked from base_url (key=value,... in the environment)"},
	}
}

// Settings returns every key in display order (the order of Keys) with its
// environment variable, flag, default and help.
func Settings() []Setting {
	var out []Setting
	d := Defaults()
	for _, f := range fields() {
		s := Setting{Key: f.key, Env: f.env, Flag: f.flag, Usage: f.usage}
		v := f.format(&d)
		switch {
		case f.def != "":
			s.Default = f.def
		case f.key == "api_key", v == "", v == "0", v == "0s":
			// none worth saying, as in the flag's help
		default:
			s.Default = v
		}
		out = append(out, s)
	}
	return append(out, structuredSettings()...)
}
