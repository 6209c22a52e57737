package llm

// The wire conversions, for the tests that send a history with go-openai
// directly to show what the client's own path prevents.
var (
	WireMessages = wireMessages
	WireTools    = wireTools
)
