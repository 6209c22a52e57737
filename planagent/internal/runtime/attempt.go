package runtime

import "github.com/codeagent/codeagent/planagent/internal/runtime/attempt"

// Attempt is one attempt at one task (attempt.Attempt).
type Attempt = attempt.Attempt

// Exit is an agent dying before it reported (attempt.Exit).
type Exit = attempt.Exit
