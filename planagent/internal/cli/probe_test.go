package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// A local server serving a window smaller than the agent's first request
// stops `planagent run` before planning: exit 2, one line naming the
// server, the window, the need and the fix. The servers answer like each
// kind's documented endpoint does (Ollama /api/show and /api/ps, llama.cpp
// /props, LM Studio /api/v1/models, vLLM /v1/models); no chat request is
// ever made.
func TestRunRefusesASmallLocalWindow(t *testing.T) {
	kinds := map[string]struct {
		answer map[string]any // by path
		fix    string
	}{
		"Ollama": {map[string]any{
			"/api/show": map[string]any{"model_info": map[string]any{"general.architecture": "qwen3", "qwen3.context_length": 131072}},
			"/api/ps":   map[string]any{"models": []map[string]any{{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}}},
		}, "OLLAMA_CONTEXT_LENGTH=65536"},
		"llama.cpp": {map[string]any{
			"/props": map[string]any{"default_generation_settings": map[string]any{"n_ctx": 8192}, "total_slots": 4},
		}, "-c 262144 --parallel 4"},
		"LM Studio": {map[string]any{
			"/api/v1/models": map[string]any{"models": []map[string]any{{"key": "qwen3:8b", "max_context_length": 40960,
				"loaded_instances": []map[string]any{{"id": "qwen3:8b", "config": map[string]any{"context_length": 4096}}}}}},
		}, "--context-length 40960"},
		"vLLM": {map[string]any{
			"/v1/models": map[string]any{"data": []map[string]any{{"id": "qwen3:8b", "max_model_len": 4096}}},
		}, "--max-model-len 65536"},
	}
	for kind, k := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var chats atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/chat/completions") {
					chats.Add(1)
				}
				if a, ok := k.answer[r.URL.Path]; ok {
					json.NewEncoder(w).Encode(a)
					return
				}
				http.NotFound(w, r)
			}))
			defer srv.Close()
			f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "qwen3:8b",
				"CODEAGENT_RUNTIME": "local", "CODEAGENT_VOLUMES_DIR": filepath.Join(t.TempDir(), "volumes")})
			code := cmdutil.Main(f, NewCmdRoot(f), []string{"run", "--yes", "write hello.txt"})
			if code != cmdutil.ExitUsage {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, errb)
			}
			msg := errb.String()
			for _, want := range []string{kind, srv.URL, "needs about 12216", k.fix} {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr lacks %q:\n%s", want, msg)
				}
			}
			if n := chats.Load(); n != 0 {
				t.Errorf("%d chat requests before the refusal", n)
			}
		})
	}
}
