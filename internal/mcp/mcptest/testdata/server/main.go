// Command server is mcptest's server as a program of its own, for tests
// that need it where the test binary cannot go (inside a container): build
// it static with CGO_ENABLED=0.
package main

import "github.com/codeagent/codeagent/internal/mcp/mcptest"

func main() { mcptest.Serve() }
