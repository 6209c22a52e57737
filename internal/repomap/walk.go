package repomap

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/filetree"
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
	oid   string // the object id git's index vouches for; "" when it does not (see tracked)
}

// tree is what a walk found: the source files (sorted by path) and the
// go.mod files that tell Go import paths where they live.
type tree struct {
	files  []fileStat
	gomods []fileStat

	includeTests bool // see policyDir and policyFile
}

// mapSkipsDir names directories the map leaves out on top of what no
// program walks (filetree's policy): third-party code is not the
// project's, and hidden directories (.idea, .cache, .github, ...) hold
// tooling. Test directories are the map's other policy: see policyDir.
func mapSkipsDir(name string) bool {
	return name == "third_party" || strings.HasPrefix(name, ".") && name != "." && name != ".."
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

// walk lists the source files under root that a map should cover: what
// the workspace's file policy shows (filetree: .gitignore files,
// .git/info/exclude, dependency trees, exclude), less the map's own
// policy (mapSkipsDir, policyDir, policyFile, generated files), each
// with the object id git's index vouches for.
// Unreadable directories are skipped: a map of the rest is more useful
// than an error.
func walk(ctx context.Context, root string, includeTests bool, exclude []string) (*tree, error) {
	t := &tree{includeTests: includeTests}
	index := readTracked(root)
	files := filetree.New(root, filetree.Options{Exclude: exclude})
	err := files.Walk(ctx, "", func(rel string, e fs.DirEntry) error {
		name := e.Name()
		if e.IsDir() {
			if mapSkipsDir(name) || policyDir(path.Dir(rel), name, t.includeTests) {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		lang := LangOf(name)
		isMod := name == "go.mod"
		if lang == "" && !isMod || generatedName(name) || policyFile(name, t.includeTests) {
			return nil
		}
		fi, err := e.Info()
		if err != nil || fi.Size() > maxFileSize {
			return nil
		}
		st := fileStat{rel: rel, lang: lang, mtime: fi.ModTime().UnixNano(), size: fi.Size(), oid: index.id(rel, fi)}
		if isMod {
			t.gomods = append(t.gomods, st)
		} else {
			t.files = append(t.files, st)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(t.files, func(i, j int) bool { return t.files[i].rel < t.files[j].rel })
	return t, nil
}
