package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// NewCmdProbe builds `codingagent probe`, planagent's check from inside a
// container, before a run, that the model server can be reached from there.
func NewCmdProbe(f *cmdutil.Factory) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Exit 0 when the model server at the base URL answers from here",
		Long: `Send GET <base_url>/models (with the API key) and exit 0 on any HTTP
answer, even 401 or 404: the server is reachable. A connection that fails
prints the URL and the cause on one line and exits 1. planagent runs it in a
short-lived container before a run, where the agent's network is.`,
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.Config(cmd)
			if err != nil {
				return err
			}
			target := strings.TrimRight(l.BaseURL, "/") + "/models"
			shown := redactURL(l.BaseURL)
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return cmdutil.UsageError(fmt.Errorf("base URL %s: %w", shown, err))
			}
			// As the agent will: a server (or proxy) that wants the key
			// answers 401 without it, which would say nothing wrong.
			if l.APIKey != "" {
				req.Header.Set("Authorization", "Bearer "+l.APIKey)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return cmdutil.Failed(fmt.Errorf("model server at %s does not answer: %s", shown, causeOf(err)))
			}
			defer resp.Body.Close()
			// planagent's model gateway answers for a model server it
			// cannot reach: that server does not answer from here either.
			if resp.Header.Get(gatewayUpstreamHeader) == "unreachable" {
				var body struct {
					Error struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
				return cmdutil.Failed(fmt.Errorf("model server behind the gateway at %s does not answer: %s", shown, body.Error.Message))
			}
			_, err = fmt.Fprintf(f.IO.Out, "model server at %s answers (HTTP %d)\n", shown, resp.StatusCode)
			return err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for an answer")
	return cmd
}

// gatewayUpstreamHeader is planagent's gateway.UpstreamHeader (codingagent
// does not link planagent's packages).
const gatewayUpstreamHeader = "Codeagent-Gateway-Upstream"

// redactURL hides a password in the URL's user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// causeOf is the innermost message of a request error ("dial tcp
// 172.17.0.1:8080: connect: connection refused"), not the Get "…" prefix.
func causeOf(err error) string {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
