package llmclient_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// avianRecording is Avian's Kimi K2.5 answering the weather conversation
// with reasoning_content (and plain-text reasoning_details), then the
// second request, carrying the reasoning back as reasoning_content, that
// Avian accepted (charmbracelet/fantasy's cassette, in the provider-traffic
// folder beside the clone).
const avianRecording = "fantasy/TestOpenAICompatibleThinking/avian-kimi/thinking-streaming.yaml"

// providerTraffic reads a recording of the provider-traffic folder
// (llmtest.TrafficDir: the one place that finds it, or skips naming why).
func providerTraffic(t *testing.T, rel string) []byte {
	t.Helper()
	raw, err := os.ReadFile(llmtest.Recording(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEchoReplayAvian: Avian's host is not in the profile table; the echo
// profile sends the second request's reasoning back as Avian accepted it.
func TestEchoReplayAvian(t *testing.T) {
	var c llmtest.Cassette
	if err := yaml.Unmarshal(providerTraffic(t, avianRecording), &c); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if n >= len(c.Interactions) {
			http.Error(w, "the recording has no more interactions", http.StatusGone)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, c.Interactions[n].Response.Body)
	}))
	t.Cleanup(srv.Close)
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "moonshotai/kimi-k2.5"})
	if p := client.Profile(); p.Reasoning != llm.ReasoningEcho {
		t.Fatalf("profile %s sends reasoning %s, want echo", p.Name, p.Reasoning)
	}
	weatherLoop(t, client, true)
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	assistant := func(body []byte) map[string]any {
		var req struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		for _, m := range req.Messages {
			if m["role"] == "assistant" {
				return m
			}
		}
		t.Fatalf("no assistant message in %s", body)
		return nil
	}
	got, want := assistant(bodies[1]), assistant([]byte(c.Interactions[1].Request.Body))
	if got["reasoning_content"] != want["reasoning_content"] {
		t.Errorf("reasoning_content sent %q, Avian accepted %q", got["reasoning_content"], want["reasoning_content"])
	}
	if _, ok := got["reasoning_details"]; ok {
		t.Errorf("unsigned reasoning_details sent back: %v", got["reasoning_details"])
	}
}
