package docker

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// Each cause of a model server out of the container's reach gets its own
// advice, found from the host: only a server on the loopback alone is told
// to listen on 0.0.0.0.
func TestHostAdvice(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downPort := free.Addr().(*net.TCPAddr).Port
	free.Close() // nothing listens there now

	loop, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	go func() {
		for {
			c, err := loop.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	loopURL := "http://" + loop.Addr().String() + "/v1"

	for _, tc := range []struct {
		name         string
		url          string
		want         string
		loopbackOnly bool
	}{
		{name: "server down", url: "http://127.0.0.1:" + strconv.Itoa(downPort) + "/v1", want: "start the model server"},
		{name: "no DNS", url: "http://model-server.invalid:8000/v1", want: "does not resolve on this machine either (DNS)"},
		{name: "loopback only", url: loopURL, loopbackOnly: true},
		{name: "not a URL", url: "::", want: "is not a URL with a host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.loopbackOnly && nonLoopbackIP() == "" {
				t.Fatal("this host has no address but the loopback: the loopback-only case cannot be told apart")
			}
			advice, loopbackOnly, answers := hostAdvice(t.Context(), tc.url)
			if answers != tc.loopbackOnly {
				t.Errorf("answers = %v for %s", answers, tc.url)
			}
			if loopbackOnly != tc.loopbackOnly || !strings.Contains(advice, tc.want) {
				t.Errorf("advice %q, loopback only %v; want %q, %v", advice, loopbackOnly, tc.want, tc.loopbackOnly)
			}
			if !tc.loopbackOnly && strings.Contains(advice, "0.0.0.0") {
				t.Errorf("told to listen on 0.0.0.0: %q", advice)
			}
		})
	}
}
