package docgen

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLinks walks every relative link of README.md and docs/**/*.md, and
// the other markdown files at the top of the repository, and fails on a
// target that does not exist or a #fragment that names no heading of it:
// the README and the docs are kept true by moving links with the text.
func TestLinks(t *testing.T) {
	repo := filepath.Join("..", "..")
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(repo, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(repo, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, l := range links(string(text)) {
			checked++
			if msg := checkLink(repo, f, l.target); msg != "" {
				t.Errorf("%s:%d: link %q: %s", f, l.line, l.target, msg)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links found: the link scanner no longer sees them", checked)
	}
}

type link struct {
	target string
	line   int
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// links returns the markdown link targets of text outside code blocks and
// code spans, with their lines.
func links(text string) []link {
	var out []link
	fence := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// checkLink says what is wrong with target as a link in file ("" for
// nothing): external links are not fetched.
func checkLink(repo, file, target string) string {
	if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	dest := filepath.Join(repo, file)
	if path != "" {
		dest = filepath.Join(filepath.Dir(dest), filepath.FromSlash(path))
	}
	st, err := os.Stat(dest)
	if err != nil {
		return "no such file " + dest
	}
	if frag == "" || st.IsDir() || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	text, err := os.ReadFile(dest)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(text))[frag] {
		return fmt.Sprintf("%s has no heading #%s", dest, frag)
	}
	return ""
}

// anchors returns the ids GitHub gives the headings of a markdown text:
// lower case, punctuation but '-' and '_' dropped, spaces as '-', a repeated
// id suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	fence := false
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		id := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func TestAnchors(t *testing.T) {
	ids := anchors("# Kubernetes: every attempt a Job\n```\n# not a heading\n```\n## Cost\n### Cost\n## What the agent can and cannot reach (threat model)\n")
	for _, want := range []string{"kubernetes-every-attempt-a-job", "cost", "cost-1", "what-the-agent-can-and-cannot-reach-threat-model"} {
		if !ids[want] {
			t.Errorf("no anchor %s in %v", want, ids)
		}
	}
	if ids["not-a-heading"] {
		t.Error("a comment in a code block became a heading")
	}
}
