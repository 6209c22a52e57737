package config

// APIKeyEnv is the environment variable holding the API key. Code that must
// keep the key out of a child's environment, a log or a tool's output
// names it through this constant, so the list of such places is a grep away.
const APIKeyEnv = "OPENAI_API_KEY"

// AnthropicKeyEnv holds the key for the anthropic api (Anthropic's own
// name for it); it takes api_key's place when the api is anthropic.
const AnthropicKeyEnv = "ANTHROPIC_API_KEY"

// IsKeyEnv reports whether name is an environment variable holding an API
// key, which no child the model can drive may inherit.
func IsKeyEnv(name string) bool {
	return name == APIKeyEnv || name == AnthropicKeyEnv
}

// APIKeyFDEnv names the file descriptor from which a program started by
// planagent's local runtime reads the API key. A pipe leaves no trace once
// read: an environment variable stays in /proc/<pid>/environ for the life
// of the process, where the model's shell could look for it.
const APIKeyFDEnv = "CODEAGENT_API_KEY_FD"
