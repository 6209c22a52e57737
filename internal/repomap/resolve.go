package repomap

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// resolver maps raw imports to files (or, for Go, package directories) of
// the repository. Imports of anything outside it (the standard library of
// another language, third-party packages) resolve to nothing.
type resolver struct {
	files   map[string]bool
	dirs    map[string]bool     // directories holding Go files
	suffix  map[string][]string // "b/c.h" → files ending in it, built on first use
	modules []goModule
	all     []string
}

type goModule struct {
	path string // module path from go.mod
	dir  string // its directory, relative to the root
}

func newResolver(root string, t *tree) *resolver {
	r := &resolver{files: make(map[string]bool, len(t.files)), dirs: map[string]bool{}}
	for _, f := range t.files {
		r.files[f.rel] = true
		r.all = append(r.all, f.rel)
		if f.lang == "go" {
			r.dirs[path.Dir(f.rel)] = true
		}
	}
	for _, m := range t.gomods {
		if mp := modulePath(filepath.Join(root, filepath.FromSlash(m.rel))); mp != "" {
			r.modules = append(r.modules, goModule{path: mp, dir: path.Dir(m.rel)})
		}
	}
	return r
}

// modulePath reads the module line of a go.mod file.
func modulePath(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// resolve returns the repository paths imported by file from its raw imports.
func (r *resolver) resolve(file, lang string, raw []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && p != file && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	dir := path.Dir(file)
	for _, imp := range raw {
		switch lang {
		case "go":
			add(r.goImport(imp))
		case "python":
			add(r.pyImport(dir, imp))
		case "javascript", "typescript":
			add(r.jsImport(dir, imp))
		case "java":
			add(r.javaImport(imp))
		case "rust":
			add(r.rustImport(file, imp))
		case "c", "cpp":
			add(r.cImport(dir, imp))
		}
	}
	return out
}

// goImport maps an import path to the package directory of the module that
// contains it. A module named "std" (GOROOT/src) holds the standard library,
// whose import paths carry no module prefix.
func (r *resolver) goImport(imp string) string {
	best, bestLen := "", -1
	for _, m := range r.modules {
		var d string
		switch {
		case imp == m.path:
			d = m.dir
		case strings.HasPrefix(imp, m.path+"/"):
			d = path.Join(m.dir, imp[len(m.path)+1:])
		case m.path == "std" && !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
			d = path.Join(m.dir, imp)
		default:
			continue
		}
		if l := len(m.path); l > bestLen && r.dirs[d] {
			best, bestLen = d, l
		}
	}
	return best
}

func (r *resolver) firstFile(cands ...string) string {
	for _, c := range cands {
		if c = path.Clean(c); r.files[c] {
			return c
		}
	}
	return ""
}

func (r *resolver) pyImport(dir, imp string) string {
	dots := len(imp) - len(strings.TrimLeft(imp, "."))
	mod := strings.ReplaceAll(imp[dots:], ".", "/")
	if dots > 0 {
		base := dir
		for i := 1; i < dots; i++ {
			base = path.Dir(base)
		}
		if mod == "" {
			return r.firstFile(path.Join(base, "__init__.py"))
		}
		return r.firstFile(path.Join(base, mod+".py"), path.Join(base, mod+".pyi"), path.Join(base, mod, "__init__.py"))
	}
	if f := r.firstFile(mod+".py", mod+".pyi", mod+"/__init__.py"); f != "" {
		return f
	}
	// Packages often live under a source root (src/, lib/): find the module
	// by suffix and prefer the candidate nearest the importer.
	for _, suffix := range []string{mod + ".py", mod + "/__init__.py"} {
		if f := r.nearest(dir, r.bySuffix(suffix)); f != "" {
			return f
		}
	}
	return ""
}

var jsExtensions = []string{"", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts",
	"/index.ts", "/index.tsx", "/index.js", "/index.jsx", "/index.mjs"}

func (r *resolver) jsImport(dir, imp string) string {
	var base string
	switch {
	case strings.HasPrefix(imp, "./") || strings.HasPrefix(imp, "../") || imp == "." || imp == "..":
		base = path.Join(dir, imp)
	case strings.HasPrefix(imp, "@/") || strings.HasPrefix(imp, "~/"): // common source-root aliases
		base = "src/" + imp[2:]
	case strings.HasPrefix(imp, "/"):
		base = strings.TrimPrefix(imp, "/")
	default:
		return "" // a package from node_modules
	}
	for _, ext := range jsExtensions {
		if f := r.firstFile(base + ext); f != "" {
			return f
		}
	}
	// TypeScript ESM imports name the compiled .js file of a .ts source.
	if stem, ok := strings.CutSuffix(base, ".js"); ok {
		return r.firstFile(stem+".ts", stem+".tsx")
	}
	return ""
}

func (r *resolver) javaImport(imp string) string {
	imp = strings.TrimSuffix(imp, ".*")
	parts := strings.Split(imp, ".")
	// Drop trailing members (static imports, nested classes) until a file matches.
	for n := len(parts); n > 0; n-- {
		if f := r.nearest("", r.bySuffix(strings.Join(parts[:n], "/")+".java")); f != "" {
			return f
		}
	}
	return ""
}

// rustImport resolves "mod:name" declarations and crate::/self::/super:: paths.
func (r *resolver) rustImport(file, imp string) string {
	dir := path.Dir(file)
	// The directory holding this module's children: a file foo.rs keeps
	// them in foo/, while mod.rs, lib.rs and main.rs keep them beside it.
	modDir := dir
	if b := path.Base(file); b != "mod.rs" && b != "lib.rs" && b != "main.rs" {
		modDir = path.Join(dir, strings.TrimSuffix(b, ".rs"))
	}
	if name, ok := strings.CutPrefix(imp, "mod:"); ok {
		return r.firstFile(path.Join(modDir, name+".rs"), path.Join(modDir, name, "mod.rs"))
	}
	segs := strings.Split(strings.SplitN(imp, "::{", 2)[0], "::")
	var base string
	switch segs[0] {
	case "crate":
		base = r.crateRoot(dir)
	case "self":
		base = modDir
	case "super":
		base = dir
		if b := path.Base(file); b == "mod.rs" || b == "lib.rs" || b == "main.rs" {
			base = path.Dir(dir)
		}
	default:
		return ""
	}
	segs = segs[1:]
	for n := len(segs); n > 0; n-- {
		p := path.Join(append([]string{base}, segs[:n]...)...)
		if f := r.firstFile(p+".rs", p+"/mod.rs"); f != "" {
			return f
		}
	}
	return ""
}

// crateRoot is the nearest ancestor directory of dir holding lib.rs or main.rs.
func (r *resolver) crateRoot(dir string) string {
	for d := dir; ; d = path.Dir(d) {
		if r.files[path.Join(d, "lib.rs")] || r.files[path.Join(d, "main.rs")] {
			return d
		}
		if d == "." || d == "/" || d == "" {
			return dir
		}
	}
}

func (r *resolver) cImport(dir, imp string) string {
	if len(imp) < 3 {
		return ""
	}
	name := imp[1 : len(imp)-1]
	if imp[0] == '"' {
		if f := r.firstFile(path.Join(dir, name)); f != "" {
			return f
		}
	}
	if f := r.firstFile(name, "include/"+name, "src/"+name); f != "" {
		return f
	}
	return r.nearest(dir, r.bySuffix(name))
}

// bySuffix returns the files whose path ends with the slash path suffix
// (at a segment boundary).
func (r *resolver) bySuffix(suffix string) []string {
	if r.suffix == nil {
		r.suffix = make(map[string][]string, len(r.all)*3)
		for _, f := range r.all {
			for i := len(f) - 1; i >= 0; i-- {
				if f[i] == '/' {
					r.suffix[f[i+1:]] = append(r.suffix[f[i+1:]], f)
				}
			}
			r.suffix[f] = append(r.suffix[f], f)
		}
	}
	return r.suffix[suffix]
}

// nearest picks the candidate sharing the longest directory prefix with dir.
func (r *resolver) nearest(dir string, cands []string) string {
	best, bestScore := "", -1
	for _, c := range cands {
		score := commonPrefixLen(dir, path.Dir(c))
		if score > bestScore || score == bestScore && c < best {
			best, bestScore = c, score
		}
	}
	return best
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
