// Package secretenv names the environment variables that hold secrets. It
// is a leaf, so that what must keep a key out of a child's environment (the
// agent's shell tool, the runtimes) need not import the configuration and
// what it links.
package secretenv

// APIKey is the environment variable holding the API key. Code that must
// keep the key out of a child's environment, a log or a tool's output
// names it through this constant, so the list of such places is a grep away.
const APIKey = "OPENAI_API_KEY"

// AnthropicKey holds the key for the anthropic api (Anthropic's own name
// for it); it takes api_key's place when the api is anthropic.
const AnthropicKey = "ANTHROPIC_API_KEY"

// IsKey reports whether name is an environment variable holding an API
// key, which no child the model can drive may inherit.
func IsKey(name string) bool {
	return name == APIKey || name == AnthropicKey
}

// APIKeyFD names the file descriptor from which a program started by
// planagent's local runtime reads the API key. A pipe leaves no trace once
// read: an environment variable stays in /proc/<pid>/environ for the life
// of the process, where the model's shell could look for it.
const APIKeyFD = "CODEAGENT_API_KEY_FD"
