package llmclient

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/codeagent/codeagent/internal/llm"
)

// What go-openai's Usage has no field for is read from the raw response as
// it passes through the HTTP layer: the server's own cost (OpenRouter's
// usage.cost, LiteLLM's x-litellm-response-cost header) and cache figures
// named differently by some servers (OpenRouter's cache_write_tokens,
// DeepSeek's prompt_cache_hit_tokens).

// usageExtra is what the raw response added to the parsed usage.
type usageExtra struct {
	costUSD    float64 // the server's cost of the call; 0 when none
	cacheWrite int
	cacheHit   int // DeepSeek's cached prompt tokens (within prompt_tokens)
}

// rawUsage is the part of a usage object go-openai does not read.
type rawUsage struct {
	Usage *struct {
		Cost                *float64 `json:"cost"`
		PromptCacheHit      int      `json:"prompt_cache_hit_tokens"`
		PromptTokensDetails *struct {
			CacheWrite int `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// maxCostBody bounds what a non-streamed body keeps for the usage scan.
const maxCostBody = 4 << 20

// costBody passes the response body through, scanning it for the usage
// figures: a stream line by line (the usage comes in its own chunk), a
// JSON body whole when it is closed.
type costBody struct {
	io.ReadCloser
	extra  *usageExtra
	stream bool
	buf    bytes.Buffer
}

func watchCost(resp *http.Response, extra *usageExtra) {
	if v := strings.TrimSpace(resp.Header.Get("X-Litellm-Response-Cost")); v != "" {
		if c, err := strconv.ParseFloat(v, 64); err == nil && c > 0 {
			extra.costUSD = c
		}
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &costBody{ReadCloser: resp.Body, extra: extra, stream: stream}
}

func (b *costBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && (b.stream || b.buf.Len() < maxCostBody) {
		b.buf.Write(p[:n])
	}
	if b.stream {
		for {
			i := bytes.IndexByte(b.buf.Bytes(), '\n')
			if i < 0 {
				break
			}
			line := b.buf.Next(i + 1)
			b.scan(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:")))
		}
	}
	return n, err
}

func (b *costBody) Close() error {
	if !b.stream {
		b.scan(b.buf.Bytes())
	}
	b.buf.Reset()
	return b.ReadCloser.Close()
}

func (b *costBody) scan(data []byte) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	var r rawUsage
	if json.Unmarshal(bytes.TrimSpace(data), &r) != nil || r.Usage == nil {
		return
	}
	if c := r.Usage.Cost; c != nil && *c > 0 && b.extra.costUSD == 0 {
		b.extra.costUSD = *c
	}
	if d := r.Usage.PromptTokensDetails; d != nil && d.CacheWrite > 0 {
		b.extra.cacheWrite = d.CacheWrite
	}
	if r.Usage.PromptCacheHit > 0 {
		b.extra.cacheHit = r.Usage.PromptCacheHit
	}
}

// apply adds what the raw response said to u.
func (e *usageExtra) apply(u *llm.Usage) {
	u.CostUSD = e.costUSD
	u.CacheWrite = e.cacheWrite
	if u.Cached == 0 && e.cacheHit > 0 {
		u.Cached = e.cacheHit
	}
}
