package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The probe passes on any answer of the model server, even 401, but not on
// the model gateway's answer for a model server it could not reach: the
// way to the model is broken behind the gateway.
func TestProbe(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		upstream string // the gateway's header
		wantCode int
		want     string
	}{
		{name: "answers", status: http.StatusOK, want: "answers (HTTP 200)"},
		{name: "wants a key", status: http.StatusUnauthorized, want: "answers (HTTP 401)"},
		{name: "behind a gateway that cannot reach it", status: http.StatusBadGateway, upstream: "unreachable", wantCode: 1,
			want: "does not answer: codeagent model gateway: the model server at http://host.docker.internal:9/v1 did not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.upstream != "" {
					w.Header().Set(gatewayUpstreamHeader, tt.upstream)
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(`{"type":"error","error":{"type":"api_error","message":"codeagent model gateway: the model server at http://host.docker.internal:9/v1 did not answer: connection refused"}}`))
					return
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			code, out, stderr := run(t, map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1"}, "probe", "--timeout", "30s")
			if code != tt.wantCode || !strings.Contains(out+stderr, tt.want) {
				t.Errorf("exit %d, out %q, stderr %q; want %d and %q", code, out, stderr, tt.wantCode, tt.want)
			}
		})
	}
}
