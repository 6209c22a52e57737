package repomap

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Symbol kinds.
const (
	KindType   = "type"   // class, struct, interface, trait, enum, union, typedef, type alias
	KindFunc   = "func"   // top-level function (and Go/C prototypes in headers)
	KindMethod = "method" // function belonging to a type
	KindConst  = "const"
	KindVar    = "var"
	KindModule = "module" // namespace, Rust mod, TS namespace
	KindMacro  = "macro"  // Rust macro_rules!
	KindImpl   = "impl"   // Rust impl block: a container, never a definition of its name
)

// Symbol is one definition in a file.
type Symbol struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Doc       string `json:"doc,omitempty"` // first line of the doc comment
	StartLine int    `json:"start_line"`    // 1-based, including decorators/annotations/attributes
	EndLine   int    `json:"end_line"`
	// Rank is how strongly the rest of the repository refers to this
	// definition (its share of the PageRank flowing into its file); set by Build.
	Rank float64 `json:"rank,omitempty"`
}

// ErrUnsupported is returned by ParseFile for files of no known language.
var ErrUnsupported = errors.New("no symbol extractor for this file type")

// maxSignature caps a signature; a longer one is cut with "…".
const maxSignature = 300

// parsed is everything extracted from one file.
type parsed struct {
	syms    []Symbol
	imports []string // raw, language-specific module specifiers
	refs    []string // identifiers mentioned, with repetitions
}

// ParseFile extracts the symbols and raw imports (module specifiers as
// written: Go import paths, Python dotted modules, JS specifiers, C include
// names, Rust use paths) of one file; the language comes from path's
// extension. Malformed code yields what could be recognised; ParseFile never
// panics. The error is ErrUnsupported for an unknown language, or an
// internal failure of an extractor.
func ParseFile(path string, src []byte) (syms []Symbol, imports []string, err error) {
	lang := LangOf(path)
	if lang == "" {
		return nil, nil, fmt.Errorf("%s: %w", path, ErrUnsupported)
	}
	p, err := parseSafe(lang, src)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return p.syms, p.imports, nil
}

// errExtractor marks a recovered panic in an extractor; the fuzz targets
// fail on it.
var errExtractor = errors.New("symbol extractor failed (bug): file skipped")

func parseSafe(lang string, src []byte) (p parsed, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = parsed{}, fmt.Errorf("%w: %v", errExtractor, r)
		}
	}()
	return parseLang(lang, src), nil
}

func parseLang(lang string, src []byte) parsed {
	var p parsed
	switch lang {
	case "go":
		p = parseGo(src)
	case "python":
		p = parsePython(string(src))
	case "javascript", "typescript":
		p = parseJS(string(src))
	case "java":
		p = parseJava(string(src))
	case "rust":
		p = parseRust(string(src))
	case "c", "cpp":
		p = parseCpp(string(src))
	}
	sortSymbols(p.syms)
	return p
}

// LangOf names the language of a file by its extension, or "" when no
// extractor handles it.
func LangOf(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".go":
		return "go"
	case ".py", ".pyi":
		return "python"
	case ".js", ".jsx", ".mjs", ".cjs":
		return "javascript"
	case ".ts", ".tsx", ".mts", ".cts":
		return "typescript"
	case ".java":
		return "java"
	case ".rs":
		return "rust"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".inl", ".tpp":
		return "cpp"
	}
	return ""
}

// sortSymbols orders symbols by position, an enclosing symbol before the
// ones it contains.
func sortSymbols(syms []Symbol) {
	sort.SliceStable(syms, func(i, j int) bool {
		if syms[i].StartLine != syms[j].StartLine {
			return syms[i].StartLine < syms[j].StartLine
		}
		return syms[i].EndLine > syms[j].EndLine
	})
}

// collapse joins a multi-line piece of code into one line with single
// spaces and caps its length.
func collapse(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), maxSignature+4))
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		if b.Len() >= maxSignature {
			return capText(b.String())
		}
	}
	return b.String()
}

func capText(s string) string {
	if len(s) <= maxSignature {
		return s
	}
	n := maxSignature
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// firstDocLine returns the first line of text in a comment, without the
// comment markers (//, ///, //!, /* */, /** */, leading *, #).
func firstDocLine(raw string) string {
	for line := range strings.SplitSeq(raw, "\n") {
		l := strings.TrimSpace(line)
		for _, p := range []string{"/**", "/*!", "/*", "///", "//!", "//", "#"} {
			if strings.HasPrefix(l, p) {
				l = l[len(p):]
				break
			}
		}
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), "*/"))
		l = strings.TrimSpace(strings.TrimLeft(l, "*"))
		if l != "" {
			return capText(l)
		}
	}
	return ""
}

// isUpperName reports whether a name is written like a constant (MAX_SIZE).
func isUpperName(name string) bool {
	letter := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' {
			return false
		}
		if c >= 'A' && c <= 'Z' {
			letter = true
		}
	}
	return letter
}
