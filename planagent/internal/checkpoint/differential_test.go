package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The differential test of issue 37: planagent's in-process shortcuts for
// git (a copy's checkout, the squash's tree from the index, the commit it
// writes, the move of the workspace) against what plain git makes of the
// same random repositories and edits. Each seed builds a user repository
// with real git (nested directories, names with spaces and unicode, empty
// and binary contents, exec bits, links to files, directories and
// nowhere, an ignored file), then:
//
//   - the copy NewCopy makes of its commit is, path by path (kind,
//     content, exec bit, link target), what `git clone` checks out, and
//     tracks the same paths;
//   - random edits in the copy (created, changed, removed, renamed,
//     chmod ±x, a file made a link and back, a directory made a file and
//     back, a file in a new nested directory), squashed, give the tree
//     `git add -A && git write-tree` gives of the same edits in the clone;
//   - the workspace moved to the squash (Advance) is what `git checkout`
//     of it writes, its index is git's (`ls-files -s`, its version kept)
//     and `git status` is clean;
//   - the copy recycled to the squash and taken again from the pool is
//     what git's `checkout -f` and `clean -ffdx` make of the edited clone
//     (with no conversion: git's clone of the squash);
//   - that copy, messed with by more random edits, recycled back to the
//     base (the in-process checkout, checkoutCopy, writes what differs)
//     and taken again is git's clone of the base: files, `ls-files -s`,
//     a clean status.
//
// Some seeds use a sha256 repository, others index version 4, a split
// index or the untracked cache; the
// attributes are none, neutral ones the edits may change, or conversions
// (eol=crlf, text, ident: the copies are then checked out by git).
// Seeds 1-1000 were run once, all agreeing with git.

// node is a tracked path of the model: a file (data, exec) or a link.
type node struct {
	link   bool
	target string
	data   string
	exec   bool
}

// op is one edit, drawn once and applied alike to the copy and to git's
// clone.
type op struct {
	kind     string // write, remove, link, chmod, rename
	path, to string
	data     string
	exec     bool
}

func (o op) apply(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, o.path)
	var err error
	switch o.kind {
	case "write":
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			mode := os.FileMode(0o644)
			if o.exec {
				mode = 0o755
			}
			_ = os.Remove(p) // a link is replaced, never written through
			if err = os.WriteFile(p, []byte(o.data), mode); err == nil {
				err = os.Chmod(p, mode)
			}
		}
	case "remove":
		err = os.RemoveAll(p)
	case "link":
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			_ = os.Remove(p)
			err = os.Symlink(o.to, p)
		}
	case "chmod":
		mode := os.FileMode(0o644)
		if o.exec {
			mode = 0o755
		}
		err = os.Chmod(p, mode)
	case "rename":
		to := filepath.Join(dir, o.to)
		if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
			err = os.Rename(p, to)
		}
	}
	if err != nil {
		t.Fatalf("%s %q: %v", o.kind, o.path, err)
	}
}

// gen draws a random repository and random edits of it.
type gen struct {
	rng   *rand.Rand
	model map[string]node
	n     int
}

var diffNames = []string{"a", "b", "src", "lib", "with space", "héllo", "wörld", "日本語", "x-y_z", "UPPER", "dot.ext", "ñ", "tab\tname", "e\u0301"}

func (g *gen) name() string {
	g.n++
	return fmt.Sprintf("%s%d", diffNames[g.rng.Intn(len(diffNames))], g.n)
}

func (g *gen) data() string {
	switch g.rng.Intn(6) {
	case 0:
		return ""
	case 1: // binary: NULs, CRs, high bytes
		b := make([]byte, 1+g.rng.Intn(64))
		g.rng.Read(b)
		return string(b)
	case 2:
		return "line one\r\nline two\r\n"
	case 3:
		return "no newline at the end $Id$"
	default:
		return strings.Repeat(fmt.Sprintf("text %d\n", g.rng.Intn(1000)), 1+g.rng.Intn(5))
	}
}

// dirs is every directory of the model, "" (the root) first.
func (g *gen) dirs() []string {
	set := map[string]bool{}
	for p := range g.model {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			set[d] = true
		}
	}
	out := []string{""}
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out[1:])
	return out
}

func (g *gen) paths(pred func(node) bool) []string {
	var out []string
	for p, n := range g.model {
		if pred(n) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (g *gen) pick(ss []string) string { return ss[g.rng.Intn(len(ss))] }

// fresh is a new path: in an existing directory, or in new nested ones.
func (g *gen) fresh() string {
	d := g.pick(g.dirs())
	for i := g.rng.Intn(3); i > 0 && g.rng.Intn(2) == 0; i-- {
		d = filepath.Join(d, g.name())
	}
	return filepath.Join(d, g.name())
}

// target is a link target relative to the link at p: a file, a
// directory, or nothing.
func (g *gen) target(p string) string {
	up := strings.Repeat("../", strings.Count(p, "/"))
	switch g.rng.Intn(3) {
	case 0:
		if files := g.paths(func(n node) bool { return !n.link }); len(files) > 0 {
			return up + g.pick(files)
		}
	case 1:
		if ds := g.dirs(); len(ds) > 1 {
			return up + g.pick(ds[1:])
		}
	}
	return "nowhere/" + g.name()
}

func (g *gen) newNode(p string) node {
	if g.rng.Intn(6) == 0 {
		return node{link: true, target: g.target(p)}
	}
	return node{data: g.data(), exec: g.rng.Intn(4) == 0}
}

func (n node) op(p string) op {
	if n.link {
		return op{kind: "link", path: p, to: n.target}
	}
	return op{kind: "write", path: p, data: n.data, exec: n.exec}
}

func (g *gen) removeUnder(d string) {
	for p := range g.model {
		if p == d || strings.HasPrefix(p, d+"/") {
			delete(g.model, p)
		}
	}
}

// edit draws one edit, applies it to the model and returns it.
func (g *gen) edit() op {
	files := g.paths(func(n node) bool { return !n.link })
	// git fsck --strict refuses a .gitattributes that is not a file.
	plainFiles := g.paths(func(n node) bool { return !n.link })
	plainFiles = slices.DeleteFunc(plainFiles, func(p string) bool { return filepath.Base(p) == ".gitattributes" })
	links := g.paths(func(n node) bool { return n.link })
	all := g.paths(func(node) bool { return true })
	switch k := g.rng.Intn(10); {
	case k == 1 && len(files) > 0: // modify
		p := g.pick(files)
		n := g.model[p]
		n.data = g.data() + "changed"
		g.model[p] = n
		return op{kind: "write", path: p, data: n.data, exec: n.exec}
	case k == 2 && len(all) > 0: // delete
		p := g.pick(all)
		delete(g.model, p)
		return op{kind: "remove", path: p}
	case k == 3 && len(all) > 0: // rename
		p, to := g.pick(all), g.fresh()
		g.model[to] = g.model[p]
		delete(g.model, p)
		return op{kind: "rename", path: p, to: to}
	case k == 4 && len(files) > 0: // chmod ±x
		p := g.pick(files)
		n := g.model[p]
		n.exec = !n.exec
		g.model[p] = n
		return op{kind: "chmod", path: p, exec: n.exec}
	case k == 5 && len(plainFiles) > 0: // file → link
		p := g.pick(plainFiles)
		n := node{link: true, target: g.target(p)}
		g.model[p] = n
		return n.op(p)
	case k == 6 && len(links) > 0: // link → file
		p := g.pick(links)
		n := node{data: g.data()}
		g.model[p] = n
		return n.op(p)
	case k == 7 && len(g.dirs()) > 1: // directory → file
		d := g.pick(g.dirs()[1:])
		g.removeUnder(d)
		g.model[d] = node{data: g.data() + "was a directory"}
		return op{kind: "write", path: d, data: g.model[d].data} // after a remove, below
	case k == 8 && len(plainFiles) > 0: // file → directory
		p := g.pick(plainFiles)
		delete(g.model, p)
		in := filepath.Join(p, g.name())
		g.model[in] = node{data: "was a file\n"}
		return op{kind: "write", path: in, data: g.model[in].data}
	default: // create, maybe in new nested directories
		p := g.fresh()
		n := g.newNode(p)
		g.model[p] = n
		return n.op(p)
	}
}

// edits draws count edits, each with what it needs first (the removal of
// a directory made a file, of a file made a directory).
func (g *gen) edits(count int) []op {
	var out []op
	for range count {
		before := map[string]bool{}
		for _, d := range g.dirs() {
			before[d] = true
		}
		was := map[string]bool{}
		for p := range g.model {
			was[p] = true
		}
		o := g.edit()
		if o.kind == "write" {
			if before[o.path] { // directory → file
				out = append(out, op{kind: "remove", path: o.path})
			} else if d := filepath.Dir(o.path); was[d] { // file → directory
				out = append(out, op{kind: "remove", path: d})
			}
		}
		out = append(out, o)
	}
	return out
}

// shOut is sh's stdout alone: git warns of attributes files and links
// it cannot read on stderr, wherever it happens to read them.
func shOut(t *testing.T, dir, script string) string {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", script, err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// indexVersion reads the version in the header of a git index file.
func indexVersion(t *testing.T, path string) uint32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 8 {
		t.Fatalf("index %s: %v", path, err)
	}
	return binary.BigEndian.Uint32(b[4:8])
}

func diffMaps(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var s strings.Builder
	for _, k := range keys {
		if a[k] != b[k] {
			fmt.Fprintf(&s, "  %q: planagent %q, git %q\n", k, a[k], b[k])
		}
	}
	return s.String()
}

func TestDifferentialAgainstGit(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	seeds := 25
	for seed := int64(1); seed <= int64(seeds); seed++ {
		kind := "sha1"
		switch seed % 7 {
		case 3:
			kind = "sha256"
		case 4:
			kind = "index-v4"
		case 5:
			kind = "split-index"
		case 6:
			kind = "untracked-cache"
		}
		t.Run(fmt.Sprintf("seed%d-%s", seed, kind), func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("seed %d (%s) diverges from git", seed, kind)
				}
			})
			differential(t, seed, kind)
		})
	}
}

func differential(t *testing.T, seed int64, kind string) {
	ctx := t.Context()
	g := &gen{rng: rand.New(rand.NewSource(seed)), model: map[string]node{}}
	ws := t.TempDir()
	init := "git init -q -b main"
	if kind == "sha256" {
		init += " --object-format=sha256"
	}
	sh(t, ws, init+" && git config user.name U && git config user.email u@example.com")
	switch kind {
	case "index-v4":
		sh(t, ws, "git config index.version 4")
	case "split-index":
		sh(t, ws, "git config core.splitIndex true")
	case "untracked-cache":
		sh(t, ws, "git config core.untrackedCache true")
	}
	for range 5 + g.rng.Intn(20) {
		p := g.fresh()
		g.model[p] = g.newNode(p)
	}
	// Attributes: none, neutral ones (the copy is checked out here, in
	// the model: the edits change them), or conversions (checked out by
	// git; out of the model: git's own checkout of a commit that changes
	// them differs from a move to it).
	attrs := g.rng.Intn(4)
	switch attrs {
	case 1:
		g.model[".gitattributes"] = node{data: "* -text\n"}
	case 2:
		g.model[".gitattributes"] = node{data: "a* binary\nsrc*/** diff merge=union linguist-generated\n"}
		if ds := g.dirs(); len(ds) > 1 {
			d := g.pick(ds[1:])
			g.model[filepath.Join(d, ".gitattributes")] = node{data: "* -text -diff\n"}
		}
	case 3:
		write(t, ws, ".gitattributes", "UPPER* text eol=crlf\nlib*/** ident\ndot* text\n")
	}
	t.Logf("attributes %d", attrs)
	for _, p := range g.paths(func(node) bool { return true }) {
		g.model[p].op(p).apply(t, ws)
	}
	write(t, ws, ".gitignore", "*.log\n")
	write(t, ws, "kept.log", "the user's ignored file\n")
	sh(t, ws, "git add -A && git commit -q -m base")
	// The user's files as git's checkout writes them (converted).
	sh(t, ws, "git ls-files -z | xargs -0 rm -f && git checkout -q -- .")
	switch kind {
	case "index-v4":
		sh(t, ws, "git update-index --index-version 4")
	case "split-index":
		sh(t, ws, "git update-index --split-index")
	case "untracked-cache":
		sh(t, ws, "git update-index --untracked-cache && git status --porcelain >/dev/null")
	}
	wantVersion := indexVersion(t, filepath.Join(ws, ".git", "index"))
	if kind == "index-v4" && wantVersion != 4 {
		t.Fatalf("index version %d", wantVersion)
	}
	r := open(t, ws)
	base, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copies := t.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 1)

	// The copy is git's checkout of base.
	plain := filepath.Join(t.TempDir(), "plain")
	sh(t, ws, "git clone -q --no-hardlinks . '"+plain+"'")
	cp := filepath.Join(copies, "task")
	if err := r.NewCopy(ctx, cp, base); err != nil {
		t.Fatal(err)
	}
	baseTree := tree(t, plain)
	if got := tree(t, cp); !reflect.DeepEqual(got, baseTree) {
		t.Fatalf("the copy of %s is not git's checkout:\n%s", base, diffMaps(got, baseTree))
	}
	const lsFiles = "git ls-files -s -z | tr '\\0' '\\n'"
	baseIndex := sh(t, plain, lsFiles)
	if got, want := sh(t, cp, lsFiles), baseIndex; got != want {
		t.Fatalf("the copy tracks\n%s\ngit's checkout\n%s", got, want)
	}
	if got, want := shOut(t, cp, "git status --porcelain"), shOut(t, plain, "git status --porcelain"); got != want {
		t.Errorf("git status in the copy:\n%s\nin git's checkout:\n%s", got, want)
	}

	// The same edits, squashed here and written by git.
	ops := g.edits(3 + g.rng.Intn(10))
	for _, o := range ops {
		o.apply(t, cp)
		o.apply(t, plain)
	}
	commit, _, err := r.Squash(ctx, cp, base, "edits", "")
	if err != nil {
		t.Fatal(err)
	}
	// git add warns of a path under a link that loops: only its output.
	want := sh(t, plain, "(git add -A && git write-tree) 2>/dev/null")
	got := sh(t, ws, withPending(r)+"git rev-parse "+commit+"^{tree}")
	if got != want {
		t.Fatalf("the squash's tree is %s, git's %s; edits %+v\n%s", got, want, ops,
			sh(t, plain, "export GIT_ALTERNATE_OBJECT_DIRECTORIES='"+filepath.Join(ws, ".git", "objects")+":"+r.pending.dir+"' && git diff-tree -r "+got+" "+want+" || true"))
	}
	if c, err := r.Apply(ctx, cp, base, commit, base); err != nil || c != commit {
		t.Fatalf("apply onto its base: %s %v", c, err)
	}

	// The workspace moved to the squash is git's checkout of it.
	if err := r.Advance(ctx, base, commit); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	sh(t, ws, "git clone -q --no-hardlinks . '"+wt+"'")
	gotWS, wantWS := tree(t, ws), tree(t, wt)
	if gotWS["kept.log"] != "file 644 the user's ignored file\n" {
		t.Errorf("the user's ignored file: %q", gotWS["kept.log"])
	}
	delete(gotWS, "kept.log")
	if !reflect.DeepEqual(gotWS, wantWS) {
		t.Errorf("the workspace moved to %s is not git's checkout (edits %+v):\n%s", commit, ops, diffMaps(gotWS, wantWS))
	}
	if got, want := shOut(t, ws, "git status --porcelain --ignored"), shOut(t, wt, "git status --porcelain"); got != strings.TrimSpace(want+"\n!! kept.log") {
		t.Errorf("git status after the move:\n%s\nin git's checkout:\n%s", got, want)
	}
	if got, want := sh(t, ws, "git ls-files -s -z | tr '\\0' '\\n'"), sh(t, wt, "git ls-files -s -z | tr '\\0' '\\n'"); got != want {
		t.Errorf("the index after the move:\n%s\ngit's checkout:\n%s", got, want)
	}
	if v := indexVersion(t, filepath.Join(ws, ".git", "index")); v != wantVersion {
		t.Errorf("the index is version %d after the move, was %d", v, wantVersion)
	}
	if head := sh(t, ws, "git rev-parse HEAD"); head != commit {
		t.Errorf("HEAD %s, want %s", head, commit)
	}

	// The edited copy, recycled to the squash and taken again, is git's
	// checkout of it.
	if err := r.RecycleCopy(ctx, cp, commit); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(copies, "again")
	if err := r.NewCopy(ctx, again, commit); err != nil {
		t.Fatal(err)
	}
	// git's own: the clone with the edits checked out at a commit of
	// the squash's tree and cleaned, as the recycle does it. A file the
	// edits wrote unconverted stays so (git finds it clean); without a
	// conversion that is the clone of the commit.
	sh(t, plain, "c=$(git commit-tree "+want+" -p HEAD -m edits) && git checkout -q -f --detach $c && git clean -q -ffdx")
	wantCopy := tree(t, plain)
	if attrs != 3 && !reflect.DeepEqual(wantCopy, wantWS) {
		t.Fatalf("git's checkout of the edits is not its clone of them:\n%s", diffMaps(wantCopy, wantWS))
	}
	if got := tree(t, again); !reflect.DeepEqual(got, wantCopy) {
		t.Errorf("the recycled copy at %s is not git's checkout:\n%s", commit, diffMaps(got, wantCopy))
	}
	if got, want := shOut(t, again, "git status --porcelain"), shOut(t, plain, "git status --porcelain"); got != want {
		t.Errorf("git status in the recycled copy:\n%s\nin git's checkout:\n%s", got, want)
	}

	// That copy, messed with as an agent would (the same random edits,
	// not squashed), recycled back to base and taken again: the files
	// that differ are written here (checkoutCopy) when nothing converts
	// them, and the copy is git's clone of base.
	for _, o := range g.edits(3 + g.rng.Intn(10)) {
		o.apply(t, again)
	}
	if err := r.RecycleCopy(ctx, again, base); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(copies, "back")
	if err := r.NewCopy(ctx, back, base); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, back); !reflect.DeepEqual(got, baseTree) {
		t.Errorf("the copy recycled back to %s is not git's checkout:\n%s", base, diffMaps(got, baseTree))
	}
	if got, want := sh(t, back, lsFiles), baseIndex; got != want {
		t.Errorf("the copy recycled back to %s tracks\n%s\nthe commit\n%s", base, got, want)
	}
	if st := shOut(t, back, "git status --porcelain"); st != "" {
		t.Errorf("git status in the copy recycled back:\n%s", st)
	}
	if out := sh(t, ws, "git fsck --no-dangling --strict 2>&1"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}
