package llmclient

import (
	"context"
	"time"
)

// The wire conversions, for the tests that send a history with go-openai
// directly to show what the client's own path prevents.
var (
	WireMessages = wireMessages
	WireTools    = wireTools
)

// SetSleep replaces how c waits out a backoff: tests run the retry
// schedule on a fake clock instead of sleeping it.
func SetSleep(c *Client, sleep func(context.Context, time.Duration) error) { c.sleep = sleep }
