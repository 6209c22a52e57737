package repomap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

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
	// Tokens is the budget of Map.Text (≈ characters/4): 0 means
	// DefaultTokens, a negative value renders no text.
	Tokens int
	// Boost lists paths, identifiers or free text (the goal, "@file"
	// references, focused files); files and identifiers they name rank higher.
	Boost []string

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
	refs       []identCount
	refsBlob   string // encoded refs from the cache, decoded only when ranking needs them
	rank       float64
	warning    string // why parsing failed, reported once in Map.Warnings
}

// Build maps the repository at opts.Root: it finds the source files (minus
// ignored, vendored and generated ones), extracts their symbols (from the
// cache when a file's path, mtime and size are unchanged), ranks files and
// symbols by references, and renders the outline within the token budget.
func Build(ctx context.Context, opts Options) (*Map, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("repo map root %q: %w", opts.Root, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repo map root %q is not a readable directory: point it at the workspace", opts.Root)
	}
	t, err := walk(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("repo map of %s: %w", root, err)
	}
	m := &Map{}
	var cache *cacheData
	cacheFile := ""
	if opts.CacheDir != "" {
		cacheFile = cachePath(opts.CacheDir, root)
		if cache, err = loadCache(cacheFile, root); err != nil {
			m.Warnings = append(m.Warnings, err.Error())
		}
	}

	files := make([]*fileData, len(t.files))
	var todo []*fileData
	for i, fs := range t.files {
		if cache != nil {
			if cf := cache.files[fs.rel]; cf != nil && cf.mtime == fs.mtime && cf.size == fs.size && cf.lang == fs.lang {
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

	b := boostWords(opts.Boost)
	unchanged := cache != nil && len(todo) == 0 && len(cache.files) == len(files) && sameStats(cache.gomods, t.gomods)
	dirty := !unchanged
	if !unchanged {
		r := newResolver(root, t)
		for _, f := range files {
			f.imports = r.resolve(f.rel, f.lang, f.rawImports)
		}
	}
	if !unchanged || cache.rankKey != b.key() {
		live := make([]*fileData, 0, len(files))
		for _, f := range files {
			if f.skip {
				continue
			}
			if f.refs == nil && f.refsBlob != "" {
				if f.refs, err = decodeRefs(f.refsBlob); err != nil {
					return nil, fmt.Errorf("repo map cache entry %s: %w", f.rel, err)
				}
			}
			live = append(live, f)
		}
		computeRank(live, b)
		dirty = true
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
	if dirty && cacheFile != "" {
		if err := saveCache(cacheFile, root, b.key(), t.gomods, files); err != nil {
			m.Warnings = append(m.Warnings, err.Error())
		}
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

func sameStats(a, b []fileStat) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].rel != b[i].rel || a[i].mtime != b[i].mtime || a[i].size != b[i].size {
			return false
		}
	}
	return true
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
	f.syms, f.rawImports, f.refs = p.syms, p.imports, countRefs(p.refs)
}
