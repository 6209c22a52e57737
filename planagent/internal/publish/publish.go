// Package publish opens a pull request for a run's branch on GitHub:
// through the gh CLI when it is installed and logged in, else through the
// REST API with a token (GITHUB_TOKEN or GH_TOKEN).
package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
)

// PullRequest is what is asked for: Repo is "owner/name".
type PullRequest struct {
	Repo, Title, Head, Base, Body string
}

// GitHub opens pull requests. Zero fields take their defaults.
type GitHub struct {
	LookPath func(string) (string, error)                                                         // default exec.LookPath
	Getenv   func(string) string                                                                  // default os.Getenv: GITHUB_TOKEN, GH_TOKEN, GITHUB_API_URL
	Run      func(ctx context.Context, stdin []byte, name string, args ...string) (string, error) // default: exec
	HTTP     *http.Client
}

// ErrNoWay is returned when neither gh nor a token can be used.
var ErrNoWay = errors.New("--pr needs the gh CLI, logged in (gh auth login), or a token in GITHUB_TOKEN (or GH_TOKEN)")

// Open opens the pull request and returns its URL and how it was opened
// ("gh" or "api").
func (g GitHub) Open(ctx context.Context, pr PullRequest) (url, via string, err error) {
	g = g.withDefaults()
	if gh, err := g.LookPath("gh"); err == nil {
		if _, err := g.Run(ctx, nil, gh, "auth", "status"); err == nil {
			out, err := g.Run(ctx, []byte(pr.Body), gh, "pr", "create", "--repo", pr.Repo, "--head", pr.Head,
				"--base", pr.Base, "--title", pr.Title, "--body-file", "-")
			if err != nil {
				return "", "gh", fmt.Errorf("gh pr create: %w", err)
			}
			return lastLine(out), "gh", nil
		}
	}
	token := g.Getenv("GITHUB_TOKEN")
	if token == "" {
		token = g.Getenv("GH_TOKEN")
	}
	if token == "" {
		return "", "", ErrNoWay
	}
	api := strings.TrimRight(g.Getenv("GITHUB_API_URL"), "/")
	if api == "" {
		api = "https://api.github.com"
	}
	body, _ := json.Marshal(map[string]string{"title": pr.Title, "head": pr.Head, "base": pr.Base, "body": pr.Body})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/repos/"+pr.Repo+"/pulls", bytes.NewReader(body))
	if err != nil {
		return "", "api", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.HTTP.Do(req)
	if err != nil {
		return "", "api", fmt.Errorf("GitHub API %s: %w", api, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		HTMLURL string `json:"html_url"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusCreated {
		msg := out.Message
		if msg == "" {
			msg = strings.TrimSpace(string(b))
		}
		return "", "api", fmt.Errorf("GitHub API: create the pull request in %s: HTTP %d: %s", pr.Repo, resp.StatusCode, msg)
	}
	return out.HTMLURL, "api", nil
}

func (g GitHub) withDefaults() GitHub {
	if g.LookPath == nil {
		g.LookPath = exec.LookPath
	}
	if g.Run == nil {
		g.Run = run
	}
	if g.HTTP == nil {
		g.HTTP = &http.Client{}
	}
	return g
}

func run(ctx context.Context, stdin []byte, name string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var githubRemote = regexp.MustCompile(`^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([^/]+)/([^/]+?)(?:\.git)?/?$`)

// RepoOf is the "owner/name" of a GitHub remote URL, "" for another host.
func RepoOf(remoteURL string) string {
	m := githubRemote.FindStringSubmatch(strings.TrimSpace(remoteURL))
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}
