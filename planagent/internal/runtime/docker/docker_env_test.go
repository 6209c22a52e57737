package docker

import (
	"bytes"
	"strings"
	"testing"
)

func TestRewriteBaseURL(t *testing.T) {
	tests := []struct {
		in, want  string
		rewritten bool
	}{
		{"http://localhost:11434/v1", "http://host.docker.internal:11434/v1", true},
		{"http://127.0.0.1:8000/v1", "http://host.docker.internal:8000/v1", true},
		{"http://127.1.2.3:8000", "http://host.docker.internal:8000", true},
		{"http://[::1]:4000", "http://host.docker.internal:4000", true},
		{"https://LOCALHOST/v1?x=1", "https://host.docker.internal/v1?x=1", true},
		{"http://user:pw@localhost:8080/v1", "http://user:pw@host.docker.internal:8080/v1", true},
		{"https://api.openai.com/v1", "https://api.openai.com/v1", false},
		{"http://192.168.1.5:8000/v1", "http://192.168.1.5:8000/v1", false},
		{"http://localhost.example.com/v1", "http://localhost.example.com/v1", false},
		{"", "", false},
		{"not a url", "not a url", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := rewriteBaseURL(tc.in)
			if got != tc.want || ok != tc.rewritten {
				t.Errorf("rewriteBaseURL(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.rewritten)
			}
		})
	}
}

func TestContainerEnvHostNetworkKeepsLoopback(t *testing.T) {
	tests := []struct {
		network, want string
	}{
		{"", "OPENAI_BASE_URL=http://host.docker.internal:9/v1"},
		{"bridge", "OPENAI_BASE_URL=http://host.docker.internal:9/v1"},
		{"host", "OPENAI_BASE_URL=http://localhost:9/v1"},
	}
	for _, tc := range tests {
		t.Run("network="+tc.network, func(t *testing.T) {
			d := &Docker{opts: Options{Network: tc.network, Env: map[string]string{
				"OPENAI_BASE_URL": "http://localhost:9/v1", "OPENAI_API_KEY": testKey,
			}}, log: discardLogger()}
			env := d.containerEnv("")
			want := []string{"OPENAI_API_KEY=" + testKey, tc.want}
			if strings.Join(env, "\n") != strings.Join(want, "\n") {
				t.Errorf("env = %q, want %q", env, want)
			}
		})
	}
}

// With the model gateway the container gets the gateway's URL as it is
// (no loopback rewrite: it is already an address the container reaches)
// and the attempt's token; neither key variable.
func TestContainerEnvThroughTheGateway(t *testing.T) {
	d := &Docker{opts: Options{Env: map[string]string{
		"OPENAI_BASE_URL": "http://localhost:9/v1", "OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey, "OPENAI_MODEL": "m",
	}}, gatewayBase: "http://172.17.0.1:4000/v1", log: discardLogger()}
	env := d.containerEnv("tok")
	want := []string{"OPENAI_API_KEY=tok", "OPENAI_BASE_URL=http://172.17.0.1:4000/v1", "OPENAI_MODEL=m"}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Errorf("env = %q, want %q", env, want)
	}
	if d.opts.Env["OPENAI_API_KEY"] != testKey {
		t.Error("containerEnv changed the runtime's settings")
	}
}

func TestLineTail(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		secret string
		want   string // what reaches the sink
		tail   string
	}{
		{"lines split across writes", []string{"a\nb", "c\n", "d"}, "", "a\nbc\nd\n", "a\nbc\nd"},
		{"secret masked", []string{"key=sk-0123456789\n"}, "sk-0123456789", "key=[redacted]\n", "key=[redacted]"},
		{"short secret not masked", []string{"x=ab\n"}, "ab", "x=ab\n", "x=ab"},
		{"tail keeps the last three", []string{"1\n2\n3\n4\n5\n"}, "", "1\n2\n3\n4\n5\n", "3\n4\n5"},
		{"carriage returns dropped", []string{"a\r\n"}, "", "a\n", "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sink bytes.Buffer
			lt := newLineTail(&sink, 3, tc.secret)
			for _, w := range tc.writes {
				if _, err := lt.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			lt.Flush()
			if sink.String() != tc.want || lt.String() != tc.tail {
				t.Errorf("sink %q tail %q, want %q and %q", sink.String(), lt.String(), tc.want, tc.tail)
			}
		})
	}
}
