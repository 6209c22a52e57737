package config

// APIKeyEnv is the environment variable holding the API key. Code that must
// keep the key out of a child's environment, a log or a tool's output
// names it through this constant, so the list of such places is a grep away.
const APIKeyEnv = "OPENAI_API_KEY"

// APIKeyFDEnv names the file descriptor from which a program started by
// planagent's local runtime reads the API key. A pipe leaves no trace once
// read: an environment variable stays in /proc/<pid>/environ for the life
// of the process, where the model's shell could look for it.
const APIKeyFDEnv = "CODEAGENT_API_KEY_FD"
