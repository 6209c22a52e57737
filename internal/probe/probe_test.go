package probe_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/probe"
)

// Servers answering like each kind does, with a small window. The bodies
// follow each server's documented answer (Ollama's API docs for /api/show
// and /api/ps, llama.cpp's server README for /props, LM Studio's REST v1
// docs, vLLM's OpenAI-compatible /v1/models), cut to the fields read.
func fakes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		probe.Ollama: func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/show":
				json.NewEncoder(w).Encode(map[string]any{"parameters": "temperature 0.6",
					"model_info": map[string]any{"general.architecture": "qwen3", "qwen3.context_length": 40960}})
			case "/api/ps":
				json.NewEncoder(w).Encode(map[string]any{"models": []map[string]any{{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}}})
			default:
				http.NotFound(w, r)
			}
		},
		probe.LlamaCPP: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/props" {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"default_generation_settings": map[string]any{"n_ctx": 4096}, "total_slots": 4, "model_path": "/m/qwen3-8b.gguf"})
		},
		probe.LMStudio: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/models" {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"models": []map[string]any{{"type": "llm", "key": "qwen3:8b", "max_context_length": 40960,
				"loaded_instances": []map[string]any{{"id": "qwen3:8b", "config": map[string]any{"context_length": 4096}}}}}})
		},
		probe.VLLM: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": "qwen3:8b", "object": "model", "max_model_len": 8192}}})
		},
	}
}

func TestProbeSmallWindows(t *testing.T) {
	fixes := map[string]string{
		probe.Ollama:   "OLLAMA_CONTEXT_LENGTH=40960",
		probe.LlamaCPP: "-c 262144 --parallel 4",
		probe.LMStudio: "lms load qwen3:8b --context-length 40960",
		probe.VLLM:     "--max-model-len 65536",
	}
	need := probe.Need{RepoMap: 1024, ReservedOutput: 8192}
	for kind, h := range fakes() {
		t.Run(kind, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			w := probe.Probe(t.Context(), probe.Options{BaseURL: srv.URL + "/v1", Model: "qwen3:8b", APIKey: "k"})
			if w == nil || w.Server != kind {
				t.Fatalf("Probe = %+v, want a %s window", w, kind)
			}
			err := probe.Check(w, need)
			if err == nil {
				t.Fatalf("window %d passed a need of %d", w.Context, need.Tokens())
			}
			msg := err.Error()
			for _, want := range []string{kind, srv.URL, "qwen3:8b", "12216", fixes[kind]} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message is not one line: %q", msg)
			}
			if probe.Check(w, probe.Need{ReservedOutput: w.Context - probe.FirstPromptTokens}) != nil {
				t.Error("a window that fits was refused")
			}
		})
	}
}

// A server answering none of the probes (a remote API) is left alone.
func TestProbeUnknownServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" { // OpenAI's list: no max_model_len
			json.NewEncoder(w).Encode(map[string]any{"data": []map[string]any{{"id": "gpt-4o"}}})
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	if w := probe.Probe(t.Context(), probe.Options{BaseURL: srv.URL + "/v1", Model: "gpt-4o"}); w != nil {
		t.Fatalf("Probe = %+v, want nil", w)
	}
}

// An Ollama model not loaded yet is loaded (an empty generate request, as
// the first /v1 call would) to read the window it gets; a model whose own
// maximum is too small gets that said instead of a server setting.
func TestProbeOllamaLoadsAndModelMax(t *testing.T) {
	loaded := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/show":
			json.NewEncoder(w).Encode(map[string]any{"model_info": map[string]any{"general.architecture": "llama", "llama.context_length": 8192}})
		case "/api/generate":
			loaded = true
			json.NewEncoder(w).Encode(map[string]any{"model": "tiny", "done": true})
		case "/api/ps":
			models := []map[string]any{}
			if loaded {
				models = append(models, map[string]any{"name": "tiny:latest", "model": "tiny:latest", "context_length": 4096})
			}
			json.NewEncoder(w).Encode(map[string]any{"models": models})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	w := probe.Probe(t.Context(), probe.Options{BaseURL: srv.URL + "/v1", Model: "tiny"})
	if w == nil || !loaded || w.Context != 4096 || w.Max != 8192 {
		t.Fatalf("Probe = %+v (loaded %v), want 4096 served of 8192", w, loaded)
	}
	err := probe.Check(w, probe.Need{RepoMap: 1024, ReservedOutput: 8192})
	if err == nil || !strings.Contains(err.Error(), "the model's own maximum is 8192") {
		t.Fatalf("Check = %v, want the model's maximum named", err)
	}
}
