package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// identity is who the run's commits are by: the agent, not the user, so a
// glance at `git log` tells them apart. Set per command, never in a config.
var identity = []string{
	"GIT_AUTHOR_NAME=CodeAgent", "GIT_AUTHOR_EMAIL=codeagent@localhost",
	"GIT_COMMITTER_NAME=CodeAgent", "GIT_COMMITTER_EMAIL=codeagent@localhost",
}

// gitEnv is the environment of every git command: the user's, without
// variables that would point git elsewhere, plus the identity.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, append(identity, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")...)
}

// baseArgs keep a run's git commands from doing more than asked: no hooks
// of the user's repository, no signing prompt, no pager, and a repository
// owned by another uid is still usable.
var baseArgs = []string{
	"-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
	"-c", "core.quotepath=false", "-c", "core.fsmonitor=false", "-c", "gc.auto=0", "--no-pager",
}

// hardenedArgs are added to every git command that reads an attempt's
// copy (making it, committing its files): the copy's files were written by
// an agent, so nothing in them may make git run a program or reach past the
// copy. Only the local file transport, no fsmonitor daemon, no bare
// repository found by discovery, no submodule recursion, no split index or
// untracked cache to trust, no sparse checkout (a copy is whole: a task's
// change outside the user's cone is kept). The filter drivers are the
// user's, passed per command (userFilters), and merge drivers off. No
// path HFS+ or NTFS would take for .git (".git\u200c", ".GIT.", "git~1")
// enters an index, on every system: git's default protects only the
// system it runs on, and a commit of the task's is checked out elsewhere.
var hardenedArgs = []string{
	"-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
	"-c", "safe.bareRepository=explicit", "-c", "submodule.recurse=false",
	"-c", "core.splitIndex=false", "-c", "core.untrackedCache=false",
	"-c", "core.sparseCheckout=false", "-c", "index.sparse=false",
	"-c", "core.sshCommand=false", "-c", "credential.helper=",
	"-c", "core.protectHFS=true", "-c", "core.protectNTFS=true",
}

// hardenedEnv is the environment of a hardened command: no GIT_* variable
// of the user's, no system or global config (GIT_CONFIG_GLOBAL=/dev/null
// also hides ~/.gitconfig and the XDG one), the identity.
func hardenedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, append(identity, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_PROTOCOL_FROM_USER=0")...)
}

// git runs a git command. dir is its working directory; gitDir and
// workTree, when set, are passed explicitly (the shadow repository, a copy).
// hardened commands run with hardenedArgs and hardenedEnv; extra are more
// -c settings (copyArgs: the user's filters, excludes file); env is more
// environment (the pending objects as an alternate), which a command's
// own environment overrides.
type git struct {
	dir, gitDir, workTree string
	hardened              bool
	extra                 []string
	env                   []string
}

func (g git) cmdEnv(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	full := append([]string{}, baseArgs...)
	env := gitEnv()
	if g.hardened {
		full = append(full, hardenedArgs...)
		env = hardenedEnv()
	}
	full = append(full, g.extra...)
	if g.gitDir != "" {
		full = append(full, "--git-dir="+g.gitDir)
	}
	if g.workTree != "" {
		full = append(full, "--work-tree="+g.workTree)
	}
	c := exec.CommandContext(ctx, "git", append(full, args...)...)
	c.Dir = g.dir
	// The last of a variable given twice is the one a command gets.
	c.Env = append(append(env, g.env...), extra...)
	return c
}

// run returns the command's standard output; a failure is an error with
// its standard error.
func (g git) run(ctx context.Context, args ...string) (string, error) {
	return g.runIn(ctx, nil, args...)
}

func (g git) runIn(ctx context.Context, stdin []byte, args ...string) (string, error) {
	return g.runEnv(ctx, nil, stdin, args...)
}

// runEnv is runIn with extra environment (GIT_INDEX_FILE).
func (g git) runEnv(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	c := g.cmdEnv(ctx, env, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if err := c.Run(); err != nil {
		return out.String(), &Error{Args: args, Stderr: strings.TrimSpace(errb.String()), Err: err}
	}
	return out.String(), nil
}

// line is run's output trimmed to one line (a commit id, a ref).
func (g git) line(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, args...)
	return strings.TrimSpace(out), err
}

// Error is a git command that failed.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// exitCode is the exit code of a failed git command, -1 for other errors.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// splitZ splits NUL-separated output, dropping the empty tail.
func splitZ(s string) []string {
	parts := strings.Split(s, "\x00")
	if n := len(parts); n > 0 && parts[n-1] == "" {
		parts = parts[:n-1]
	}
	return parts
}
