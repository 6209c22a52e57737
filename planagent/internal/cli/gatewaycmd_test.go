package cli

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// `planagent gateway` refuses to start, exit 2 and one line naming the
// fix, without a key, without the watcher's token, with a short token or
// with the key as the token.
func TestGatewayCommandRefusesBadSettings(t *testing.T) {
	t.Chdir(t.TempDir())
	const key = "sk-the-provider-key-0123456789abcdef"
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no key", map[string]string{GatewayTokenEnv: strings.Repeat("a", 64)}, "OPENAI_API_KEY"},
		{"no token", map[string]string{"OPENAI_API_KEY": key}, GatewayTokenEnv + " is not set"},
		{"short token", map[string]string{"OPENAI_API_KEY": key, GatewayTokenEnv: "short"}, "at least 32"},
		{"the key as token", map[string]string{"OPENAI_API_KEY": key, GatewayTokenEnv: key}, "the provider's key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, _, errb := testFactory(tc.env)
			code := cmdutil.Main(f, NewCmdRoot(f), []string{"gateway", "--addr", "127.0.0.1:0"})
			if code != cmdutil.ExitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q", code, errb, tc.want)
			}
			if strings.Contains(errb.String(), key) {
				t.Errorf("stderr holds the key: %q", errb)
			}
		})
	}
}
