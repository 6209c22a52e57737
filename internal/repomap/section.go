package repomap

import (
	"context"
	"strings"
	"time"
)

// Section renders the map for a prompt: a markdown section, or "" when the
// budget is 0 (repo_map_tokens: 0 turns it off), the tree has no code, or
// the map fails — a prompt without a map is still a working prompt, so the
// failure is returned only for logging.
func Section(ctx context.Context, opts Options) (string, error) {
	if opts.Tokens <= 0 {
		return "", nil
	}
	// A cold map of a huge tree must not hold up the first request.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := Build(ctx, opts)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(m.Text)
	if text == "" {
		return "", nil
	}
	return "## Repository map\n\nThe most referenced files and symbols of the workspace (call repo_map for more):\n\n```\n" + text + "\n```\n", nil
}

// Prompter returns a function that renders Section for a set of focused
// files, boosted on top of opts.Boost; the agent calls it when its focus
// changes, with the context of the turn (Ctrl-C stops a cold map). The
// first failure is reported through onErr (may be nil).
func Prompter(opts Options, onErr func(error)) func(ctx context.Context, focus []string) string {
	reported := false
	return func(ctx context.Context, focus []string) string {
		o := opts
		o.Boost = append(append([]string(nil), opts.Boost...), focus...)
		s, err := Section(ctx, o)
		if err != nil && !reported && onErr != nil {
			reported = true
			onErr(err)
		}
		return s
	}
}
