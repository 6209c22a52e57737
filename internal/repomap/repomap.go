package repomap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
)

// DefaultTokens is the budget of Map.Text when Options.Tokens is 0.
const DefaultTokens = 1024

// Options says what to map.
type Options struct {
	Root string // the repository (workspace) directory
	// CacheDir keeps parsed files between runs (e.g. <volumes>/context/.repomap-cache);
	// "" disables the cache.
	CacheDir string
	// CacheKey names the tree's cache file in CacheDir; "" is Root. Copies
	// of one repository (each attempt's checkout) share a key, and so
	// one file, whose entries they reuse where git's index vouches for
	// the same content (see tracked).
	CacheKey string
	// Tokens is the budget of Map.Text (≈ characters/4): 0 means
	// DefaultTokens, a negative value renders no text.
	Tokens int
	// Boost lists paths, identifiers or free text (the goal, "@file"
	// references, focused files); files and identifiers they name rank higher.
	// A boost personalises the ranking of the cached reference graph: the
	// cache itself keeps the unboosted ranking.
	Boost []string
	// IncludeTests maps test files and testdata/ too (see policyDir);
	// they are left out by default.
	IncludeTests bool
	// Exclude are extra patterns in .gitignore syntax, relative to Root,
	// for what the map must not see (as tools.NewWorkspace's exclude).
	Exclude []string

	onParse func(rel string) // test hook: called for every file actually parsed
}

// File is one mapped source file.
type File struct {
	Path    string   `json:"path"` // slash-separated, relative to Root
	Lang    string   `json:"lang"`
	Symbols []Symbol `json:"symbols"`
	// Imports are the repository files this file imports (for Go: package
	// directories), resolved from its import statements where possible.
	Imports []string `json:"imports,omitempty"`
	Rank    float64  `json:"rank"`
}

// Map is a ranked map of a repository.
type Map struct {
	Files  []File `json:"files"`  // most important first
	Text   string `json:"text"`   // the outline rendered within the budget
	Tokens int    `json:"tokens"` // EstimateTokens(Text)
	// Warnings are problems that did not stop the map (a cache that could
	// not be written, a file an extractor failed on).
	Warnings []string `json:"warnings,omitempty"`
}

// fileData is a file's state during a build and in the cache.
type fileData struct {
	fileStat
	skip       bool // generated or unreadable; cached so it is not read again
	syms       []Symbol
	rawImports []string
	imports    []string
	refsBlob   string // identifiers mentioned, encoded (see encodeRefs): decoded only to build the graph
	rank       float64
	warning    string // why parsing failed, reported once in Map.Warnings
}

// Build maps the repository at opts.Root: it finds the source files (minus
// ignored, vendored and generated ones), extracts their symbols (from the
// cache when a file's path, mtime and size are unchanged, or git's index
// vouches for the content the cache has), ranks files and
// symbols by references, and renders the outline within the token budget.
func Build(ctx context.Context, opts Options) (*Map, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("repo map root %q: %w", opts.Root, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repo map root %q is not a readable directory: point it at the workspace", opts.Root)
	}
	t, err := walk(ctx, root, opts.IncludeTests, opts.Exclude)
	if err != nil {
		return nil, fmt.Errorf("repo map of %s: %w", root, err)
	}
	m := &Map{}
	var cache *cacheData
	cacheFile := ""
	if opts.CacheDir != "" {
		key := opts.CacheKey
		if key == "" {
			key = root
		}
		cacheFile = cachePath(opts.CacheDir, key, opts.IncludeTests)
		if cache, err = loadCache(cacheFile); err != nil {
			m.Warnings = append(m.Warnings, err.Error())
		}
	}

	files := make([]*fileData, len(t.files))
	var todo []*fileData
	sameRoot := cache != nil && cache.root == root
	for i, fs := range t.files {
		if cache != nil {
			if cf := cache.files[fs.rel]; cf != nil && cf.lang == fs.lang && sameFile(cf.fileStat, fs, sameRoot) {
				cf.fileStat = fs // this tree's stat data, for the cache written next
				files[i] = cf
				continue
			}
		}
		files[i] = &fileData{fileStat: fs}
		todo = append(todo, files[i])
	}
	if err := parseAll(ctx, root, todo, opts.onParse); err != nil {
		return nil, err
	}
	for _, f := range todo {
		if f.warning != "" {
			m.Warnings = append(m.Warnings, f.warning)
		}
	}

	live := make([]*fileData, 0, len(files))
	for _, f := range files {
		if !f.skip {
			live = append(live, f)
		}
	}
	unchanged := cache != nil && len(todo) == 0 && len(cache.files) == len(files) && sameStats(cache.gomods, t.gomods, sameRoot)
	b := boostWords(opts.Boost)
	var g *graph
	if unchanged && len(b.words) > 0 {
		if g, err = cache.decodeGraph(live); err != nil {
			m.Warnings = append(m.Warnings, err.Error())
			unchanged = false
		}
	}
	if !unchanged {
		r := newResolver(root, t)
		for _, f := range files {
			f.imports = r.resolve(f.rel, f.lang, f.rawImports)
		}
		if g, err = buildGraph(live, r.goImport); err != nil {
			return nil, fmt.Errorf("repo map of %s: %w", root, err)
		}
		g.rank(live, boost{})
		if cacheFile != "" {
			if err := saveCache(cacheFile, root, t.gomods, files, g); err != nil {
				m.Warnings = append(m.Warnings, err.Error())
			}
		}
	}
	if len(b.words) > 0 {
		g.rank(live, b)
	}

	m.Files = ranked(files)
	if opts.Tokens >= 0 {
		budget := opts.Tokens
		if budget == 0 {
			budget = DefaultTokens
		}
		m.Text = Render(m.Files, budget)
		m.Tokens = EstimateTokens(m.Text)
	}
	return m, nil
}

// ranked returns the mapped files, most important first.
func ranked(files []*fileData) []File {
	out := make([]File, 0, len(files))
	for _, f := range files {
		if !f.skip {
			out = append(out, File{Path: f.rel, Lang: f.lang, Symbols: f.syms, Imports: f.imports, Rank: f.rank})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank > out[j].Rank
		}
		return out[i].Path < out[j].Path
	})
	return out
}

func sameStats(a, b []fileStat, sameRoot bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].rel != b[i].rel || !sameFile(a[i], b[i], sameRoot) {
			return false
		}
	}
	return true
}

// sameFile reports whether the cached file a holds what b holds: the same
// object id in git's index, or, under the same root, the same mtime and
// size.
func sameFile(a, b fileStat, sameRoot bool) bool {
	if a.oid != "" && a.oid == b.oid {
		return true
	}
	return sameRoot && a.mtime == b.mtime && a.size == b.size
}

// parseAll parses files in parallel, one goroutine per CPU.
func parseAll(ctx context.Context, root string, files []*fileData, hook func(string)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, f := range files {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			if hook != nil {
				hook(f.rel)
			}
			parseOne(root, f)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("repo map: %w", err)
	}
	return nil
}

// parseOne reads and parses one file. Unreadable and generated files are
// marked skip; so is a file an extractor failed on, with a warning.
func parseOne(root string, f *fileData) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.rel)))
	if int64(len(src)) != f.size {
		f.oid = "" // changed since the walk: what was read is not what the index vouched for
	}
	if err != nil || generatedHead(src) {
		f.skip = true
		return
	}
	p, err := parseSafe(f.lang, src)
	if err != nil {
		f.skip = true
		f.warning = fmt.Sprintf("%s: %v", f.rel, err)
		return
	}
	// Encoded at once: a large tree's references, kept as strings until
	// ranking, would dominate the memory of a cold map.
	f.syms, f.rawImports, f.refsBlob = detach(p.syms), cloneAll(p.imports), encodeRefs(countRefs(p.refs))
}

// detach copies the symbols' text out of what the extractor sliced it from:
// a name or a doc line cut from the file's source, or from a whole doc
// comment, would keep all of that alive for as long as the map lives (the
// sources of every file of a tree, for the lexed languages).
// The slices are copied at their length: append's spare capacity would
// stay allocated as long, too.
func detach(syms []Symbol) []Symbol {
	if len(syms) == 0 {
		return syms
	}
	out := make([]Symbol, len(syms))
	for i, s := range syms {
		s.Name, s.Signature, s.Doc = strings.Clone(s.Name), strings.Clone(s.Signature), strings.Clone(s.Doc)
		out[i] = s
	}
	return out
}

func cloneAll(ss []string) []string {
	if len(ss) == 0 {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.Clone(s)
	}
	return out
}
