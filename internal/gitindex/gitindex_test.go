package gitindex

import (
	"crypto/sha1" //nolint:gosec // git's checksums
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lsFiles is git ls-files --stage with names unquoted.
const lsFiles = "git ls-files --stage -z | tr '\\0' '\\n'"

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@example.com",
		"GIT_COMMITTER_NAME=U", "GIT_COMMITTER_EMAIL=u@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// repo is a repository of the given object format with awkward names: a
// long path, spaces and tabs, non-ASCII, an executable, a link, and an
// intent-to-add entry (extended flags in version 3).
func repo(t *testing.T, format string) string {
	t.Helper()
	ws := t.TempDir()
	sh(t, ws, "git init -q --object-format="+format+" .")
	long := strings.Repeat("d", 200) + "/" + strings.Repeat("f", 250)
	for p, body := range map[string]string{long: "x", "a b/c\td.txt": "y", "z/é.txt": "z", "run.sh": "#!/bin/sh\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, ws, "chmod +x run.sh && ln -s run.sh link && git add -A && git commit -q -m one && echo n > later.txt && git add -N later.txt")
	return ws
}

// lsStage is the index as Read gives it, in git ls-files --stage's form.
func lsStage(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%o %s %d\t%s\n", e.Stat[6], hex.EncodeToString(e.OID), e.Flags&FlagStage>>12, e.Path)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Read gives what git ls-files --stage lists, in versions 2 and 3, in both
// object formats; ReadAny tells the format by the checksum; version 4 is
// refused with ErrVersion.
func TestReadIsLsFiles(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		ws := repo(t, format)
		want := sh(t, ws, lsFiles)
		idLen := map[string]int{"sha1": 20, "sha256": 32}[format]
		for _, v := range []string{"2", "3"} {
			sh(t, ws, "git update-index --index-version "+v)
			entries, _, err := Read(filepath.Join(ws, ".git", "index"), idLen)
			if got := lsStage(entries); err != nil || got != want {
				t.Errorf("%s version %s: %v\n%s\nwant\n%s", format, v, err, got, want)
			}
			entries, _, n, err := ReadAny(filepath.Join(ws, ".git", "index"))
			if got := lsStage(entries); err != nil || n != idLen || got != want {
				t.Errorf("%s version %s, ReadAny: id length %d, %v\n%s", format, v, n, err, got)
			}
		}
		sh(t, ws, "git update-index --index-version 4")
		if _, _, err := Read(filepath.Join(ws, ".git", "index"), idLen); !errors.Is(err, ErrVersion) {
			t.Errorf("%s version 4: %v, want ErrVersion", format, err)
		}
	}
}

// An index cut anywhere, or with a checksum of neither format, is an
// error, never a panic or a wrong entry.
func TestReadRefusesDamage(t *testing.T) {
	t.Parallel()
	ws := repo(t, "sha1")
	p := filepath.Join(ws, ".git", "index")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "index")
	for cut := 0; cut < len(data)-20; cut += 7 {
		if err := os.WriteFile(bad, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if entries, _, err := Read(bad, 20); err == nil && len(entries) == 5 {
			t.Fatalf("cut at %d of %d: read all five entries", cut, len(data))
		}
		if _, _, _, err := ReadAny(bad); err == nil {
			t.Fatalf("cut at %d: ReadAny took it", cut)
		}
	}
	flipped := append([]byte(nil), data...)
	flipped[40] ^= 1 // a stat byte of the first entry: the checksum no longer holds
	if err := os.WriteFile(bad, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadAny(bad); err == nil {
		t.Error("ReadAny took an index whose checksum does not hold")
	}
}

// What Encode writes is an index git reads back as it was, and the stat
// data StatData gives makes git see the files as clean.
func TestEncodeIsReadByGit(t *testing.T) {
	t.Parallel()
	ws := repo(t, "sha1")
	sh(t, ws, "git rm -q --cached later.txt && rm later.txt")
	p := filepath.Join(ws, ".git", "index")
	entries, _, err := Read(p, 20)
	if err != nil {
		t.Fatal(err)
	}
	want := sh(t, ws, lsFiles)
	for i, e := range entries {
		fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(e.Path)))
		if err != nil {
			t.Fatal(err)
		}
		st, ok := StatData(fi)
		if !ok || st != e.Stat {
			t.Errorf("%s: StatData %v, %v; git wrote %v", e.Path, st, ok, e.Stat)
		}
		entries[i].Stat[0]++ // a changed ctime: git must refresh, then find nothing changed
	}
	if err := os.WriteFile(p, Encode(entries, sha1.New()), 0o644); err != nil { //nolint:gosec // git's checksums
		t.Fatal(err)
	}
	if got := sh(t, ws, lsFiles); got != want {
		t.Errorf("git reads\n%s\nwant\n%s", got, want)
	}
	if got := sh(t, ws, "git status --porcelain"); got != "" {
		t.Errorf("git status after the round trip: %q", got)
	}
}

// An index git split (its entries partly in a shared file) or made sparse
// (directories for entries) is refused, naming the extension, rather than
// read as if its entries were all there; an optional extension (the
// cache tree, "TREE"; the untracked cache, "UNTR") is skipped.
func TestMandatoryExtensionsRefused(t *testing.T) {
	for _, c := range []struct{ name, setup, sig string }{
		{"split", "git update-index --split-index", "link"},
		{"sparse", "mkdir -p in out && echo i > in/i && echo o > out/o && git add -A && git commit -q -m two && " +
			"git sparse-checkout init --cone && git sparse-checkout set in && git config index.sparse true && git sparse-checkout reapply", "sdir"},
		{"untracked cache", "git update-index --untracked-cache && git status -uall >/dev/null", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := repo(t, "sha1")
			sh(t, ws, "git reset -q && "+c.setup)
			_, _, err := Read(filepath.Join(ws, ".git", "index"), 20)
			var ee *ExtensionError
			if c.sig == "" {
				if err != nil {
					t.Fatalf("read = %v, want the entries", err)
				}
				return
			}
			if !errors.As(err, &ee) || ee.Signature != c.sig {
				t.Fatalf("read = %v, want an ExtensionError for %q", err, c.sig)
			}
		})
	}
}
