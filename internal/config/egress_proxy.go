package config

import (
	"fmt"
	"net/url"
	"strconv"
)

// EgressProxyEnv names the egress proxy planagent's local runtime serves on
// loopback to its one watcher, which runs every attempt: the watcher gives
// each attempt's commands the proxy under the attempt's name
// (AttemptProxyEnv), so a refusal says which task and attempt it was.
const EgressProxyEnv = "CODEAGENT_EGRESS_PROXY"

// AttemptProxyEnv is the proxy settings for the commands of attempt n of
// task: proxy with "<task>.<n>" as its user, which clients send in
// Proxy-Authorization. It names the attempt, it proves nothing: the local
// runtime does not enforce egress at all. No secret goes there.
func AttemptProxyEnv(proxy, task string, n int) ([]string, error) {
	u, err := url.Parse(proxy)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%s=%q: want http://HOST:PORT, the egress proxy planagent serves", EgressProxyEnv, proxy)
	}
	// A password, though it hides nothing: some clients send no
	// Proxy-Authorization for a user alone.
	u.User = url.UserPassword(task+"."+strconv.Itoa(n), "attempt")
	s := u.String()
	return []string{"HTTPS_PROXY=" + s, "https_proxy=" + s, "HTTP_PROXY=" + s, "http_proxy=" + s}, nil
}
