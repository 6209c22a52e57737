package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// tree is what a directory holds, .git aside: each path's kind and
// content ("file 644 …", "link → …", "dir").
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link → " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			data, _ := os.ReadFile(p)
			exec := "644"
			if fi.Mode()&0o100 != 0 {
				exec = "755"
			}
			out[rel] = "file " + exec + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A recycled copy checked out here (checkoutCopy) is what git's checkout
// makes of it: for every pair of commits below (files added, changed,
// removed; exec bits; links; a directory become a file and back) and
// every kind of mess an agent leaves (same-size edits with the old
// modification time, removals, a tracked directory made a link to a
// directory outside, a file made a link or a directory, untracked and
// ignored files), the copy holds exactly the commit's tree, git finds it
// clean, and nothing outside is written. Most remakes run no git process
// at all; the rest fall back to git.
func TestCheckoutCopyIsGitCheckout(t *testing.T) {
	gitHeavy(t)
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	c0, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(base, id string, edit func(dir string)) string {
		_, c := attempt(t, r, base, id, edit)
		return c
	}
	c1 := commit(c0, "c1", func(dir string) {
		write(t, dir, "src/a.go", "package src // a\n")
		write(t, dir, "src/b.go", "package src // b\n")
		write(t, dir, "src/sub/c.go", "package sub\n")
		write(t, dir, "bin/run.sh", "#!/bin/sh\necho run\n")
		if err := os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("src/a.go", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
	})
	c2 := commit(c1, "c2", func(dir string) {
		write(t, dir, "src/a.go", "package src // a, changed\n")
		if err := os.Remove(filepath.Join(dir, "src/b.go")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(dir, "src/sub")); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "src/sub", "now a file\n")
		if err := os.Remove(filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("bin/run.sh", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "new/deep/file.txt", "deep\n")
	})
	outside := t.TempDir()
	write(t, outside, "a.go", "outside, must stay\n")
	write(t, outside, "notes.txt", "outside, must stay\n")
	write(t, outside, "b.go", "outside, must stay\n") // c2 removes src/b.go
	mess := map[string]func(dir string){
		"nothing": func(string) {},
		"same-size edit, old mtime": func(dir string) {
			p := filepath.Join(dir, "notes.txt")
			fi, err := os.Lstat(p)
			if err != nil {
				return
			}
			data, _ := os.ReadFile(p)
			if len(data) > 0 {
				data[0] ^= 0x20
			}
			write(t, dir, "notes.txt", string(data))
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"edits and removals": func(dir string) {
			_ = os.WriteFile(filepath.Join(dir, "src/a.go"), []byte("scribbled over, longer than before\n"), 0o644)
			_ = os.Remove(filepath.Join(dir, "notes.txt"))
			_ = os.Chmod(filepath.Join(dir, ".gitignore"), 0o755)
		},
		"tracked directory made a link outside": func(dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "src")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "src")); err != nil {
				t.Fatal(err)
			}
		},
		"file made a link outside, another a directory": func(dir string) {
			_ = os.Remove(filepath.Join(dir, "notes.txt"))
			if err := os.Symlink(filepath.Join(outside, "notes.txt"), filepath.Join(dir, "notes.txt")); err != nil {
				t.Fatal(err)
			}
			_ = os.RemoveAll(filepath.Join(dir, ".gitignore"))
			write(t, dir, ".gitignore/inside", "a directory now\n")
		},
		"untracked, ignored, and in the way of new paths": func(dir string) {
			write(t, dir, "build/out.bin", "ignored\n")
			write(t, dir, "scratch.txt", "untracked\n")
			_ = os.RemoveAll(filepath.Join(dir, "new/deep/file.txt"))
			write(t, dir, "new/deep/file.txt/x", "a directory where a file comes\n")
			write(t, dir, "src/b.go.orig", "untracked\n")
		},
	}
	pairs := [][2]string{{c0, c1}, {c1, c2}, {c2, c1}, {c1, c1}, {c2, c0}}
	count := gitCounter(t)
	copies := t.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 1)
	procs, remakes := 0, 0
	// Thrown away plainly, the next copy checks every file; recycled (the
	// mess cleaned as the copy is remade at from), the next copy trusts it
	// and writes only what differs between from and to.
	for _, recycle := range []bool{false, true} {
		for name, m := range mess {
			if recycle {
				name += ", recycled"
			}
			for _, pair := range pairs {
				from, to := pair[0], pair[1]
				dir := filepath.Join(copies, "a")
				if err := r.NewCopy(ctx, dir, from); err != nil {
					t.Fatal(err)
				}
				m(dir)
				throw := r.RemoveCopy
				if recycle {
					throw = func(dir string) error { return r.RecycleCopy(ctx, dir, from) }
				}
				if err := throw(dir); err != nil {
					t.Fatal(err)
				}
				count()
				next := filepath.Join(copies, "b")
				if err := r.NewCopy(ctx, next, to); err != nil {
					t.Fatalf("%s, %s → %s: %v", name, short(from), short(to), err)
				}
				procs += count()
				remakes++
				ref := filepath.Join(t.TempDir(), "ref")
				sh(t, ws, withPending(r)+"mkdir -p '"+ref+"' && git archive "+to+" | tar -x -C '"+ref+"'")
				got, want := tree(t, next), tree(t, ref)
				for p, w := range want {
					if got[p] != w {
						t.Errorf("%s, %s → %s: %s is %q, want %q", name, short(from), short(to), p, got[p], w)
					}
				}
				for p, g := range got {
					if _, ok := want[p]; !ok {
						t.Errorf("%s, %s → %s: %s (%q) should not be there", name, short(from), short(to), p, g)
					}
				}
				if out := sh(t, next, "git status --porcelain --ignored && git rev-parse HEAD"); out != to {
					t.Errorf("%s, %s → %s: git status and HEAD in the copy: %q", name, short(from), short(to), out)
				}
				// The index is git's: the same entries as the commit's tree.
				ls := sh(t, next, "git ls-files -s | awk '{print $1, $2, $4}'")
				tr := sh(t, next, "git ls-tree -r "+to+" | awk '{print $1, $3, $4}'")
				if ls != tr {
					t.Errorf("%s, %s → %s: index\n%s\nwant\n%s", name, short(from), short(to), ls, tr)
				}
				if err := r.RemoveCopy(next); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, f := range []string{"a.go", "notes.txt", "b.go"} {
		if got := read(t, outside, f); got != "outside, must stay\n" {
			t.Errorf("the file outside the copy %s was written: %q", f, got)
		}
	}
	// The fast path must be what most remakes take: a remake by git
	// checkout is one process.
	if procs > remakes/3 {
		t.Errorf("%d git processes in %d remakes: the copies were mostly checked out by git", procs, remakes)
	}
	t.Logf("%d git processes in %d remakes", procs, remakes)
}

// A squash's tree, written here from the index git add made (indexTree),
// is the one `git write-tree` writes from the same files, for every kind
// of change: files added, changed and removed, directories emptied, a file
// made a directory and back, exec bits, links, everything removed. The
// squash runs one git process (add).
func TestSquashTreeIsGitsWriteTree(t *testing.T) {
	gitHeavy(t)
	ws := userRepo(t)
	sh(t, ws, `mkdir -p dir/sub x/y && echo a > a.txt && echo b > dir/b.txt && echo c > dir/sub/c.txt &&
		echo z > x/y/z.txt && printf '#!/bin/sh\n' > exe.sh && chmod +x exe.sh && ln -s a.txt link &&
		git add -A && git commit -qm base`)
	r := open(t, ws)
	ctx := t.Context()
	base, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copies := t.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 1)
	rm := func(dir string, paths ...string) {
		for _, p := range paths {
			if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := map[string]func(dir string){
		"a new file":           func(dir string) { write(t, dir, "new.txt", "new\n") },
		"a new directory":      func(dir string) { write(t, dir, "n1/n2/deep.txt", "deep\n") },
		"a change":             func(dir string) { write(t, dir, "dir/b.txt", "b, changed\n") },
		"a directory emptied":  func(dir string) { rm(dir, "dir/sub/c.txt") },
		"a whole tree removed": func(dir string) { rm(dir, "x") },
		"a file made a directory": func(dir string) {
			rm(dir, "a.txt")
			write(t, dir, "a.txt/inner", "inner\n")
		},
		"a directory made a file": func(dir string) {
			rm(dir, "dir/sub")
			write(t, dir, "dir/sub", "a file now\n")
		},
		"exec bits": func(dir string) {
			_ = os.Chmod(filepath.Join(dir, "exe.sh"), 0o644)
			_ = os.Chmod(filepath.Join(dir, "a.txt"), 0o755)
		},
		"links": func(dir string) {
			rm(dir, "link", "dir/b.txt")
			_ = os.Symlink("exe.sh", filepath.Join(dir, "link"))
			_ = os.Symlink("../a.txt", filepath.Join(dir, "b.txt"))
		},
		"everything removed": func(dir string) {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != ".git" {
					rm(dir, e.Name())
				}
			}
		},
		"nothing": func(string) {},
	}
	count := gitCounter(t)
	// The first squash on base learns that it has no submodule (ls-tree).
	attempt(t, r, base, "warm", func(string) {})
	for name, edit := range cases {
		dir := filepath.Join(copies, "task")
		if err := r.NewCopy(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
		edit(dir)
		count()
		commit, _, err := r.Squash(ctx, dir, base, name, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := count(); n > 1 {
			t.Errorf("%s: the squash ran %d git processes, want 1 (add)", name, n)
		}
		// Every object of the commit is in your repository or waits with
		// the pending ones, and no object file stays behind in a
		// quarantine: the squash finds what git add wrote without listing
		// the quarantine.
		if missing := sh(t, ws, withPending(r)+"git rev-list --objects --missing=print "+commit+" | grep '^?' || true"); missing != "" {
			t.Errorf("%s: objects of the commit missing from the repository: %s", name, missing)
		}
		qs, _ := filepath.Glob(filepath.Join(filepath.Dir(r.private), "objects-q*"))
		for _, q := range qs {
			if left, err := listFiles(q); err != nil || len(left) > 0 {
				t.Errorf("%s: %s keeps %v (%v)", name, q, left, err)
			}
		}
		idx := filepath.Join(t.TempDir(), "index")
		want := sh(t, ws, "export GIT_INDEX_FILE='"+idx+"' && git read-tree "+base+
			" && git --work-tree='"+dir+"' add -A && git write-tree")
		if got := sh(t, ws, withPending(r)+"git rev-parse "+commit+"^{tree}"); got != want {
			t.Errorf("%s: the squash's tree is %s, git's %s\n%s", name, got, want, sh(t, ws, withPending(r)+"git diff-tree -r "+got+" "+want))
		}
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
	}
	if out := sh(t, ws, "git fsck --no-dangling 2>&1"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}

// Attributes files that set no conversion (text turned off, diff, merge,
// linguist) leave a copy's checkout here; any conversion, a macro or a
// quoted pattern leaves it to git.
func TestNeutralAttributes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file    string
		neutral bool
	}{
		{"", true},
		{"# Treat all files as binary\n\n* -text\n", true},
		{"*.png binary\n*.go diff=golang linguist-generated=true\n*.sum merge=union -crlf\n", true},
		{"docs/** export-ignore whitespace=tab-in-indent\n", true},
		{"* text=auto\n", false},
		{"*.txt text\n", false},
		{"*.bat eol=crlf\n", false},
		{"*.sh -text\n*.c crlf\n", false},
		{"*.psd filter=lfs diff=lfs merge=lfs -text\n", false},
		{"*.c ident\n", false},
		{"*.txt working-tree-encoding=UTF-16\n", false},
		{"*.txt !text\n", false},
		{"[attr]mine text eol=lf\n*.x mine\n", false},
		{"\"a b.txt\" -text\n", false},
	} {
		if got := neutralAttributes([]byte(c.file)); got != c.neutral {
			t.Errorf("%q: neutral %v, want %v", c.file, got, c.neutral)
		}
	}
}

// A repository whose .gitattributes only turns text off (as the Go
// standard library's vendored telemetry does) has its copies checked out
// here, with no git process, as git would; one that converts line endings
// has them checked out by git, converted.
func TestCheckoutWithAttributes(t *testing.T) {
	gitHeavy(t)
	for _, c := range []struct {
		attributes string
		here       bool
	}{
		{"* -text\n*.go diff=golang\n", true},
		{"*.txt text eol=crlf\n", false},
	} {
		ws := userRepo(t)
		write(t, ws, "sub/.gitattributes", c.attributes)
		write(t, ws, "sub/a.txt", "one\ntwo\n")
		sh(t, ws, "git add -A && git commit -q -m attributes")
		r := open(t, ws)
		ctx := t.Context()
		c0, err := r.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, c1 := attempt(t, r, c0, "t1", func(dir string) { write(t, dir, "sub/b.txt", "three\nfour\n") })
		count := gitCounter(t)
		copies := t.TempDir()
		r.SetPool(filepath.Join(copies, ".pool"), 1)
		dir := filepath.Join(copies, "a")
		if err := r.NewCopy(ctx, dir, c0); err != nil {
			t.Fatal(err)
		}
		if err := r.RecycleCopy(ctx, dir, c0); err != nil {
			t.Fatal(err)
		}
		count()
		next := filepath.Join(copies, "b")
		if err := r.NewCopy(ctx, next, c1); err != nil {
			t.Fatal(err)
		}
		procs := count()
		if here := procs == 0; here != c.here {
			t.Errorf("%q: %d git processes for the copy, want it checked out here: %v", c.attributes, procs, c.here)
		}
		ref := filepath.Join(t.TempDir(), "ref")
		sh(t, ws, withPending(r)+"git clone -q . '"+ref+"' && git -C '"+ref+"' checkout -q "+c1)
		got, want := tree(t, next), tree(t, ref)
		for p, w := range want {
			if got[p] != w {
				t.Errorf("%q: %s is %q, want %q as git checks it out", c.attributes, p, got[p], w)
			}
		}
		if out := sh(t, next, "git status --porcelain --ignored"); out != "" {
			t.Errorf("%q: git status in the copy: %q", c.attributes, out)
		}
	}
}
