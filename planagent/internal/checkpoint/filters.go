package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// A task's files are cleaned, and its copy's files smudged, with the
// filter drivers of the user's own config (their repository's, global
// and system config, read here with their environment), never with any a
// copy defines: the hardened commands that read a copy get them as -c
// settings. So git-crypt, LFS or nbstripout treat what an agent wrote as
// they treat what the user writes.

// filter is one filter driver of the user's config.
type filter struct {
	name                   string
	clean, smudge, process string
	required               bool
}

// userFilters reads the user's filter drivers and adds them to copyArgs.
// A driver whose name holds "=" cannot be passed with -c and is left out
// (git then runs none for it: the content goes in as it is).
func (r *Repo) userFilters(ctx context.Context) error {
	r.filters = map[string]*filter{}
	// Exit 1 is "no such key".
	out, _ := r.g.run(ctx, "config", "-z", "--get-regexp", `^filter\.`)
	for _, kv := range splitZ(out) {
		key, value, _ := strings.Cut(kv, "\n")
		i, j := strings.Index(key, "."), strings.LastIndex(key, ".")
		if i == j || strings.Contains(key, "=") {
			continue
		}
		name, variable := key[i+1:j], strings.ToLower(key[j+1:])
		f := r.filters[name]
		if f == nil {
			f = &filter{name: name}
			r.filters[name] = f
		}
		switch variable {
		case "clean":
			f.clean = value
		case "smudge":
			f.smudge = value
		case "process":
			f.process = value
		case "required":
			f.required = isTrue(value)
		}
	}
	names := make([]string, 0, len(r.filters))
	for n := range r.filters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		// Only what is set: an empty process is one git tries to start.
		f, pre := r.filters[n], "filter."+n+"."
		for _, kv := range [][2]string{{"clean", f.clean}, {"smudge", f.smudge}, {"process", f.process}} {
			if kv[1] != "" {
				r.copyArgs = append(r.copyArgs, "-c", pre+kv[0]+"="+kv[1])
			}
		}
		if f.required {
			r.copyArgs = append(r.copyArgs, "-c", pre+"required=true")
		}
	}
	return nil
}

// isTrue is git's reading of a boolean config value.
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

// FilterError is a filter driver the user's config marks required whose
// program cannot be run here: every task touching a file it filters
// would fail, or, where git were told otherwise, commit the file
// unfiltered.
type FilterError struct{ Name, Program string }

func (e *FilterError) Error() string {
	return fmt.Sprintf("the filter %q is required (filter.%s.required) but its program %q cannot be run: install it (for LFS: git-lfs, then `git lfs install`), or unset filter.%s.required if the repository does not use it",
		e.Name, e.Name, e.Program, e.Name)
}

// CheckFilters refuses, before a run does anything, a required filter
// driver of the user's config whose clean program cannot be run.
func (r *Repo) CheckFilters(ctx context.Context) error {
	names := make([]string, 0, len(r.filters))
	for n, f := range r.filters {
		if f.required {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f := r.filters[n]
		cmd := f.process
		if cmd == "" {
			cmd = f.clean
		}
		if prog, ok := runnable(ctx, cmd); !ok {
			return &FilterError{Name: n, Program: prog}
		}
	}
	return nil
}

// runnable reports whether the shell command cmd's program can be run,
// and names it: a path, a program on PATH, or for `git <name>` git's own
// command or a git-<name> program.
func runnable(ctx context.Context, cmd string) (string, bool) {
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return "(none)", false
	}
	prog := strings.Trim(words[0], `'"`)
	if strings.Contains(prog, "/") {
		fi, err := os.Stat(prog)
		return prog, err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
	}
	if _, err := exec.LookPath(prog); err != nil {
		return prog, false
	}
	if prog != "git" || len(words) < 2 || strings.HasPrefix(words[1], "-") {
		return prog, true
	}
	sub := strings.Trim(words[1], `'"`)
	if _, err := exec.LookPath("git-" + sub); err == nil {
		return prog + " " + sub, true
	}
	if dir, err := exec.CommandContext(ctx, "git", "--exec-path").Output(); err == nil {
		if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(dir)), "git-"+sub)); err == nil {
			return prog + " " + sub, true
		}
	}
	// A built-in command of git has no program of its own.
	if err := exec.CommandContext(ctx, "git", sub, "-h").Run(); err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 129 {
			return prog + " " + sub, true
		}
	}
	return prog + " " + sub, false
}
