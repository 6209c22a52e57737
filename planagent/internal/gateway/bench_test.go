package gateway_test

import (
	"slices"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// BenchmarkGatewayOverhead times the same request to the same llmtest
// server directly and through the gateway, alternating, with the real
// client; ms-p50-added is the difference of the medians: what the
// gateway's hop costs a request.
func BenchmarkGatewayOverhead(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(b *testing.B) {
			srv := llmtest.New(b, llmtest.WithKey(realKey), llmtest.WithChunkSize(8))
			srv.Handle(func(llmtest.Request) llmtest.Reply {
				return llmtest.Text("a short answer of a few chunks, as a tool call's turn has")
			})
			_, base, token, _ := start(b, srv.URL)
			direct := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: srv.URL, APIKey: realKey, Model: "m"})
			through := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "m"})
			req := llm.Request{Stream: stream, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			// one is a request's time and, streamed, the mean time from
			// one chunk to the next as the client got them.
			one := func(c *llmclient.Client) (total, chunk time.Duration) {
				var seen []time.Time
				t0 := time.Now()
				if _, err := c.Chat(b.Context(), req, func(string) { seen = append(seen, time.Now()) }); err != nil {
					b.Fatal(err)
				}
				total = time.Since(t0)
				if n := len(seen); n > 1 {
					chunk = seen[n-1].Sub(seen[0]) / time.Duration(n-1)
				}
				return total, chunk
			}
			one(direct) // connections opened outside the timing
			one(through)
			var d, g, dc, gc []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t, c := one(direct)
				d, dc = append(d, t), append(dc, c)
				t, c = one(through)
				g, gc = append(g, t), append(gc, c)
			}
			pd, pg := p50(d), p50(g)
			b.ReportMetric(ms(pd), "ms-p50-direct")
			b.ReportMetric(ms(pg), "ms-p50-gateway")
			b.ReportMetric(ms(pg-pd), "ms-p50-added")
			if stream {
				b.ReportMetric(ms(p50(gc)-p50(dc)), "ms-p50-chunk-added")
			}
		})
	}
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
