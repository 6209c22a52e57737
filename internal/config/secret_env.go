package config

import "github.com/codeagent/codeagent/internal/secretenv"

// The environment variables holding secrets, under the names the
// configuration's users know them by (secretenv says what each is).
const (
	APIKeyEnv       = secretenv.APIKey
	AnthropicKeyEnv = secretenv.AnthropicKey
	APIKeyFDEnv     = secretenv.APIKeyFD
)

// IsKeyEnv is secretenv.IsKey.
func IsKeyEnv(name string) bool { return secretenv.IsKey(name) }
