package repomap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxFileSize skips larger files: at that size a source file is data or
// generated, and parsing it would cost more than its map entry is worth.
const maxFileSize = 1 << 20

// fileStat is one source file found by the walk.
type fileStat struct {
	rel   string // slash-separated, relative to the root
	lang  string
	mtime int64 // UnixNano
	size  int64
}

// tree is what a walk found: the source files (sorted by path) and the
// go.mod files that tell Go import paths where they live.
type tree struct {
	files  []fileStat
	gomods []fileStat
}

// skippedDir names directories never mapped: version control data,
// vendored and third-party code, dependency trees, caches, and testdata
// (test fixtures by Go convention, often deliberately broken code whose
// names would only add noise to the ranking).
func skippedDir(name string) bool {
	switch name {
	case "vendor", "node_modules", "third_party", "bower_components", "__pycache__", "venv", "site-packages",
		"testdata":
		return true
	}
	// Hidden directories (.git, .venv, .idea, .cache, ...) hold tooling, not the project's code.
	return strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// generatedName reports files whose names mark them as generated or minified.
func generatedName(name string) bool {
	for _, suffix := range []string{".min.js", ".min.mjs", "_pb2.py", "_pb2_grpc.py", "_pb2.pyi", ".pb.go",
		".pb.gw.go", ".pb.cc", ".pb.h", "_grpc.pb.go", ".bundle.js", ".d.ts.map"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// generatedHead reports whether a file declares itself generated in its
// first 8 KiB: Go's "Code generated ... DO NOT EDIT." convention, which
// other generators follow in their own comment syntax, or "@generated".
func generatedHead(src []byte) bool {
	head := src[:min(len(src), 8<<10)]
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if bytes.Contains(line, []byte("Code generated")) && bytes.Contains(line, []byte("DO NOT EDIT")) ||
			bytes.Contains(line, []byte("@generated")) {
			return true
		}
	}
	return false
}

// walk lists the source files under root that a map should cover, honouring
// .gitignore files (and .git/info/exclude). Unreadable directories are
// skipped: a map of the rest is more useful than an error.
func walk(ctx context.Context, root string) (*tree, error) {
	t := &tree{}
	rules := readIgnoreFile(filepath.Join(root, ".git", "info", "exclude"), "")
	if err := walkDir(ctx, root, "", rules, t); err != nil {
		return nil, err
	}
	sort.Slice(t.files, func(i, j int) bool { return t.files[i].rel < t.files[j].rel })
	return t, nil
}

func walkDir(ctx context.Context, abs, rel string, rules []ignoreRule, t *tree) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			rules = append(rules[:len(rules):len(rules)], readIgnoreFile(filepath.Join(abs, ".gitignore"), rel)...)
			break
		}
	}
	for _, e := range entries {
		name := e.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		switch {
		case e.IsDir():
			if skippedDir(name) || ignored(rules, childRel, true) {
				continue
			}
			if err := walkDir(ctx, filepath.Join(abs, name), childRel, rules, t); err != nil {
				return err
			}
		case e.Type().IsRegular():
			lang := LangOf(name)
			isMod := name == "go.mod"
			if lang == "" && !isMod || generatedName(name) || ignored(rules, childRel, false) {
				continue
			}
			fi, err := e.Info()
			if err != nil || fi.Size() > maxFileSize {
				continue
			}
			fs := fileStat{rel: childRel, lang: lang, mtime: fi.ModTime().UnixNano(), size: fi.Size()}
			if isMod {
				t.gomods = append(t.gomods, fs)
			} else {
				t.files = append(t.files, fs)
			}
		}
	}
	return nil
}

// under reports whether rel is dir or inside it ("" is the root).
func under(rel, dir string) bool {
	return dir == "" || dir == "." || rel == dir || strings.HasPrefix(rel, dir+"/")
}
