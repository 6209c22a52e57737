package catalog

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modelName finds the model names of the known families in prose: the
// hosted models' makers and the open models' families, with the vendor/
// prefix a gateway (OpenRouter) names them by.
var modelName = regexp.MustCompile(`(?:\b[a-z-]+/)?\b(gpt-[0-9][0-9a-z.-]*[0-9a-z]|gpt-oss[0-9a-z-]*|o[134](?:-[a-z0-9-]*[a-z0-9])?|claude-[a-z0-9.-]*[a-z0-9]|gemini-[a-z0-9.-]*[a-z0-9]|deepseek-[a-z0-9.-]*[a-z0-9]|kimi-[a-z0-9.-]*[a-z0-9]|qwen[0-9][a-z0-9.:-]*[a-z0-9]|grok-[a-z0-9.-]*[a-z0-9]|glm-[a-z0-9.-]*[a-z0-9]|mistral-[a-z0-9.-]*[a-z0-9]|codestral-[a-z0-9.-]*[a-z0-9])\b`)

// notInCatalog are names the docs mention that the catalog is not meant to
// resolve, each with why.
var notInCatalog = map[string]string{
	"qwen3:8b":      "an Ollama tag of a local model: a local server has no catalog entry, its window is probed",
	"qwen3-coder":   "named as a local model (Ollama, llama.cpp): probed, not priced",
	"qwen2.5-coder": "named as a local model (Ollama, llama.cpp): probed, not priced",
	"gpt-oss":       "the open-weights family served by llama.cpp in the docs: local, probed",
	"gpt-oss-20b":   "served by llama.cpp in the docs: local, probed",
	"grok-3-mini":   "named as the source of recorded traffic in the provider table, not as a model to configure",
	"kimi-k2":       "named as the source of recorded traffic in the provider table, not as a model to configure",
	// The README's DeepSeek example names the API's aliases; the embedded
	// catalog (catwalk v0.52.1) lists only deepseek-v4-flash and -pro, and
	// which of them an alias serves is DeepSeek's choice, changed without
	// notice: guessing would show the wrong prices. Cost shows "-" and
	// --budget-usd asks for prices: for the README to name a current model.
	"deepseek-chat":     "a DeepSeek API alias the catalog does not list (see above)",
	"deepseek-reasoner": "a DeepSeek API alias the catalog does not list (see above)",
}

// Every model name the README, docs/ and examples/ mention resolves in the
// catalog (its window and prices), or is listed above with its reason: a
// user who copies a name from the docs gets its cost and --budget-usd.
func TestDocsModelNames(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (dir == "examples" || strings.HasSuffix(p, ".md")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	found := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range modelName.FindAllString(string(b), -1) {
			if rel, _ := filepath.Rel(root, f); !slices.Contains(found[name], rel) {
				found[name] = append(found[name], rel)
			}
		}
	}
	if len(found) < 5 {
		t.Fatalf("found only %v in %d files: the walk or the pattern is broken", found, len(files))
	}
	for name, where := range found {
		if _, ok := notInCatalog[name]; ok {
			continue
		}
		m, ok := Lookup("https://gateway.example.com/v1", name)
		if !ok {
			t.Errorf("%s (in %s) is not in the catalog: resolve it, or list it in notInCatalog with the reason", name, strings.Join(where, ", "))
			continue
		}
		if m.ContextWindow <= 0 {
			t.Errorf("%s resolves to %s with no context window", name, m.Name())
		}
	}
	for name := range notInCatalog {
		if _, ok := found[name]; !ok {
			t.Errorf("notInCatalog lists %s, which no doc mentions any more: drop it", name)
		}
	}
}
