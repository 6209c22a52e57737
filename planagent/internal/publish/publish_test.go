package publish

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRepoOf(t *testing.T) {
	for url, want := range map[string]string{
		"git@github.com:acme/widget.git":        "acme/widget",
		"https://github.com/acme/widget":        "acme/widget",
		"https://x-token@github.com/acme/w.git": "acme/w",
		"ssh://git@github.com/acme/widget.git":  "acme/widget",
		"https://gitlab.com/acme/widget.git":    "",
		"/srv/git/widget.git":                   "",
		"https://github.com/acme/widget/issues": "",
	} {
		if got := RepoOf(url); got != want {
			t.Errorf("RepoOf(%q) = %q, want %q", url, got, want)
		}
	}
}

// Without gh and a token there is no way; an API error is named with its
// message.
func TestOpenWithoutAWayAndAPIErrors(t *testing.T) {
	noGH := func(string) (string, error) { return "", errors.New("not found") }
	env := map[string]string{}
	g := GitHub{LookPath: noGH, Getenv: func(k string) string { return env[k] }}
	if _, _, err := g.Open(t.Context(), PullRequest{Repo: "a/b"}); !errors.Is(err, ErrNoWay) {
		t.Errorf("no gh, no token: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"message":"A pull request already exists for acme:x."}`))
	}))
	defer srv.Close()
	env["GH_TOKEN"], env["GITHUB_API_URL"] = "t", srv.URL
	_, via, err := g.Open(t.Context(), PullRequest{Repo: "acme/widget", Head: "x", Base: "main"})
	if via != "api" || err == nil || err.Error() != "GitHub API: create the pull request in acme/widget: HTTP 422: A pull request already exists for acme:x." {
		t.Errorf("Open = %s, %v", via, err)
	}
}
