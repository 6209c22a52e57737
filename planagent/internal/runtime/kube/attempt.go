package kube

import "github.com/codeagent/codeagent/planagent/internal/runtime/attempt"

// Attempt is one attempt at one task (attempt.Attempt).
type Attempt = attempt.Attempt

// Exit is an agent dying before it reported (attempt.Exit).
type Exit = attempt.Exit

// ExecResult is an acceptance command's output and exit code (attempt.ExecResult).
type ExecResult = attempt.ExecResult
