package boundary

import (
	"net"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/poll"
)

func TestCanaryCountsAConnection(t *testing.T) {
	c := NewCanary("127.0.0.1:0")
	if c == nil {
		t.Fatal("no canary on loopback")
	}
	defer c.Close()
	if c.Touched() {
		t.Fatal("touched before anyone connected")
	}
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The canary counts on its own goroutine.
	poll.Wait(t.Context(), 10*time.Second, c.Touched)
	if !c.Touched() {
		t.Error("a connection left the canary untouched")
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{Verified: true}, "verified"},
		{Verdict{Failed: []string{"a", "b"}}, "failed: a; b"},
		{Verdict{Note: "not verified: trusted mode"}, "not verified: trusted mode"},
	}
	for _, tc := range tests {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.v, got, tc.want)
		}
	}
}
