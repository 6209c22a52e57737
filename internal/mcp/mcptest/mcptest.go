// Package mcptest is a real MCP server built with the official SDK, for
// tests: a test binary re-executes itself as the stdio server (Command and
// MaybeServe in TestMain), or serves it over streamable HTTP (NewHTTP).
package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvMode selects what the re-executed test binary does: "serve" runs the
// stdio server, "die" writes a complaint to stderr and exits 1 at once,
// "hang" never answers.
const EnvMode = "CODEAGENT_MCPTEST_MODE"

// MaybeServe turns the process into the stdio server when EnvMode is set;
// call it first in TestMain. It does not return then.
func MaybeServe() {
	switch os.Getenv(EnvMode) {
	case "":
		return
	case "serve":
		Serve()
	case "die":
		fmt.Fprintln(os.Stderr, "mcptest starting")
		fmt.Fprintln(os.Stderr, "fatal: cannot open database /nonexistent/db.sqlite")
		os.Exit(1)
	case "hang":
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "mcptest: unknown mode", os.Getenv(EnvMode))
	os.Exit(2)
}

// Serve runs the server on stdin/stdout and exits when the client goes.
func Serve() {
	if err := NewServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command is the running test binary (os.Args[0], absolute) and the env
// making it the server in mode, for an mcp_servers entry.
func Command(t testing.TB, mode string) (string, map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe, map[string]string{EnvMode: mode}
}

// NewHTTP serves the server over streamable HTTP until the test ends; the
// handler refuses requests without "Authorization: Bearer <token>" when
// token is not "".
func NewHTTP(t testing.TB, token string) *httptest.Server {
	t.Helper()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return NewServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type noteIn struct {
	Note string `json:"note"`
}

type envIn struct {
	Name string `json:"name"`
}

type sizeIn struct {
	Chars int `json:"chars"`
}

type none struct{}

// NewServer is the test server with these tools: echo, add and whereami
// (read-only),
// write_note, getenv (reads its own environment), big (a long answer),
// image, two report_status_of_the_current_build_* tools with long names,
// fail (a tool error) and crash (the process exits mid-call).
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.", Annotations: ro},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: ro},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write_note", Description: "Save a note."},
		func(_ context.Context, _ *sdk.CallToolRequest, in noteIn) (*sdk.CallToolResult, any, error) {
			return text("saved note: " + in.Note), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "getenv", Description: "Read an environment variable of the server."},
		func(_ context.Context, _ *sdk.CallToolRequest, in envIn) (*sdk.CallToolResult, any, error) {
			return text(in.Name + "=" + os.Getenv(in.Name)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "whereami", Description: "Say where the server runs: host name, working directory and process id.", Annotations: ro},
		func(_ context.Context, _ *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			host, _ := os.Hostname()
			wd, _ := os.Getwd()
			return text(fmt.Sprintf("host=%s cwd=%s pid=%d", host, wd, os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Answer with many characters."},
		func(_ context.Context, _ *sdk.CallToolRequest, in sizeIn) (*sdk.CallToolResult, any, error) {
			return text("BEGIN" + strings.Repeat("x", in.Chars) + "END"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Return a picture."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a red dot:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}}, nil, nil
		})
	// Two long names, alike in their first 35 characters, to show cutting
	// names at 64 and refusing what collides after the cut.
	for _, variant := range []string{"alpha", "beta"} {
		sdk.AddTool(s, &sdk.Tool{Name: "report_status_of_the_current_build_" + variant, Description: "Report the build status (" + variant + ")."},
			func(_ context.Context, _ *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
				return text("build ok (" + variant + ")"), nil, nil
			})
	}
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the backing service said no")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit the server process mid-call."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "panic: crash tool called")
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}
