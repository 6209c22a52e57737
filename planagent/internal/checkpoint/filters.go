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
	"sync"
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

// userSettings are what of the user's config the hardened commands that
// read or check out a copy get (userConfig), read on first use: a command
// that makes no copy, squash nor merge (status, diff, rollback) starts no
// git process for them.
type userSettings struct {
	once sync.Once
	read func(context.Context) userConfig
	cfg  userConfig
}

// userConfig is what userSettings hold.
type userConfig struct {
	// copyArgs are the -c settings: the user's filter drivers (their
	// repository's and global config's, never a copy's), merge drivers
	// off, the user's global excludes and attributes files and line
	// endings kept (a task's commit is what the user's own git add would
	// make).
	copyArgs []string
	// filters are the user's filter drivers, by name.
	filters map[string]*filter
	// converts says the user's config or attributes outside the tree may
	// make git's checkout of a copy convert content (autocrlf, an
	// attributes file): then git checks copies out.
	converts bool
	// err is why the user's config could not be read: without their
	// filters a copy's content would be committed unconverted (a
	// git-crypt file in plaintext), so nothing that needs them runs.
	err error
}

// get reads the settings once; not cut short by ctx (a read cut short
// would leave a copy without the user's filters for the rest of the run).
func (u *userSettings) get(ctx context.Context) (userConfig, error) {
	u.once.Do(func() { u.cfg = u.read(context.WithoutCancel(ctx)) })
	return u.cfg, u.cfg.err
}

// userConfig reads, in one git process with the user's environment,
// what of their config the hardened commands that read or check out a
// copy get as -c settings: their filter drivers (a driver whose name holds
// "=" cannot be passed and is left out: git then runs none for it), their
// merge drivers turned off (an empty one is an error: git's own file
// merge instead), the excludes and attributes files and line endings of
// their global config (what their own git add reads), and where their LFS
// objects are. An attributes file of the repository's converts too.
func (r *Repo) userConfig(ctx context.Context) userConfig {
	var u userConfig
	if _, err := os.Stat(filepath.Join(r.gitDir, "info", "attributes")); err == nil {
		u.converts = true
	}
	u.filters = map[string]*filter{}
	merges := map[string]bool{}
	// Exit 1 is "no such key".
	out, err := r.g.run(ctx, "config", "-z", "--get-regexp", `^(filter|merge)\.|^core\.(excludesfile|attributesfile|autocrlf|eol)$|^lfs\.storage$`)
	if err != nil && exitCode(err) != 1 {
		u.err = fmt.Errorf("read the filters and line endings of your git config: %w (fix what `git config --list` complains about, then run again)", err)
		return u
	}
	core := map[string]string{}
	lfsStorage := ""
	for _, kv := range splitZ(out) {
		key, value, _ := strings.Cut(kv, "\n")
		i, j := strings.Index(key, "."), strings.LastIndex(key, ".")
		switch {
		case strings.HasPrefix(key, "core."):
			core[key] = value
		case key == "lfs.storage":
			lfsStorage = value // the last one set, as git config lfs.storage reads it
		case i == j || strings.Contains(key, "="):
		case strings.HasPrefix(key, "merge."):
			merges[key[i+1:j]] = true
		default:
			name := key[i+1 : j]
			f := u.filters[name]
			if f == nil {
				f = &filter{name: name}
				u.filters[name] = f
			}
			switch key[j+1:] {
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
	}
	for _, n := range sortedKeys(u.filters) {
		// Only what is set: an empty process is one git tries to start.
		f, pre := u.filters[n], "filter."+n+"."
		for _, kv := range [][2]string{{"clean", f.clean}, {"smudge", f.smudge}, {"process", f.process}} {
			if kv[1] != "" {
				u.copyArgs = append(u.copyArgs, "-c", pre+kv[0]+"="+kv[1])
			}
		}
		if f.required {
			u.copyArgs = append(u.copyArgs, "-c", pre+"required=true")
		}
	}
	if _, ok := u.filters["lfs"]; ok {
		// git-lfs keeps its objects under the repository it runs in: a
		// copy has its own .git, so it is pointed at the user's storage
		// (where `git add` in the workspace would put them, and where the
		// user's objects are to smudge the copy).
		u.copyArgs = append(u.copyArgs, "-c", "lfs.storage="+r.lfsStorage(lfsStorage))
	}
	for _, n := range sortedKeys(merges) {
		u.copyArgs = append(u.copyArgs, "-c", "merge."+n+".driver=git merge-file -q %A %O %B")
	}
	home, _ := os.UserHomeDir()
	for _, key := range []string{"core.excludesfile", "core.attributesfile", "core.autocrlf", "core.eol"} {
		v, ok := core[key]
		if !ok || v == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(v, "~/"); ok && strings.HasSuffix(key, "file") && home != "" {
			v = filepath.Join(home, rest)
		}
		u.copyArgs = append(u.copyArgs, "-c", key+"="+v)
		u.converts = u.converts || key == "core.attributesfile" || (key == "core.autocrlf" && !isFalse(v))
	}
	return u
}

// lfsStorage is the user's LFS object storage: lfs.storage of their
// config (v, relative to the common git directory, as git-lfs reads it),
// by default lfs/ in that directory.
func (r *Repo) lfsStorage(v string) string {
	common := r.commonDir
	if common == "" {
		common = r.gitDir
	}
	switch {
	case v == "":
		return filepath.Join(common, "lfs")
	case filepath.IsAbs(v):
		return v
	}
	return filepath.Join(common, v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isFalse is git's reading of a false boolean config value.
func isFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0":
		return true
	}
	return false
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
	u, err := r.user.get(ctx)
	if err != nil {
		return err
	}
	filters := u.filters
	for _, n := range sortedKeys(filters) {
		f := filters[n]
		if !f.required {
			continue
		}
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
