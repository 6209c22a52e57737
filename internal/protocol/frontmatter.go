package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxFileSize is the largest command or report file accepted (1 MiB). It
// bounds what a watcher reads into memory and what ends up in a prompt.
const MaxFileSize = 1 << 20

const delimiter = "---"

var bom = []byte("\ufeff")

// splitFile separates a protocol file into the YAML document and the body.
func splitFile(data []byte) (header []byte, body string, err error) {
	if len(data) > MaxFileSize {
		return nil, "", &ParseError{Problem: fmt.Sprintf("file is larger than the %d-byte (1 MiB) limit", MaxFileSize)}
	}
	header, body, found, err := SplitFrontMatter(data)
	if err != nil {
		return nil, "", err
	}
	if !found {
		return nil, "", &ParseError{Line: 1, Problem: `missing front matter: the file must start with a "---" line, then YAML fields, then another "---" line`}
	}
	return header, body, nil
}

// SplitFrontMatter separates a markdown file with YAML front matter (the
// framing of protocol files, also used by context files). header is the YAML
// document including its opening "---" line, so that YAML line numbers are
// the file's. found is false, and body all of data, when data does not start
// with a "---" line; an opening line without a closing one is a *ParseError.
func SplitFrontMatter(data []byte) (header []byte, body string, found bool, err error) {
	data = bytes.TrimPrefix(data, bom)
	line, rest := cutLine(data)
	if line != delimiter {
		return nil, string(data), false, nil
	}
	for len(rest) > 0 {
		line, after := cutLine(rest)
		if line == delimiter {
			header = data[:len(data)-len(rest)]
			body = string(after)
			// One blank separator line belongs to the framing; writers always
			// emit it, so stripping exactly one keeps bodies lossless.
			if b, ok := strings.CutPrefix(body, "\r\n"); ok {
				body = b
			} else {
				body = strings.TrimPrefix(body, "\n")
			}
			return header, body, true, nil
		}
		rest = after
	}
	return nil, "", true, &ParseError{Problem: `unterminated front matter: no closing "---" line after the YAML fields`}
}

// cutLine returns the first line of data without its "\n" or "\r\n" and the
// rest after it; ok is false when data has no newline (the line is the rest).
func cutLine(data []byte) (line string, rest []byte) {
	l, rest, _ := bytes.Cut(data, []byte("\n"))
	return strings.TrimSuffix(string(l), "\r"), rest
}

// parseHeader parses the front matter into the top-level mapping node.
func parseHeader(header []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(header))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(err)
	}
	// yaml.Unmarshal would stop at a "..." line and silently drop the
	// fields after it; insist that nothing follows the first document.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			err = fmt.Errorf("line %d: a second YAML document follows the first", extra.Line)
		}
		return nil, yamlError(err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	root := resolve(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &ParseError{Line: root.Line, Problem: fmt.Sprintf("front matter must be YAML fields (key: value), not a %s", kindName(root))}
	}
	return root, nil
}

func yamlError(err error) error {
	return &ParseError{Problem: "front matter is not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "YAML node"
}

// field decodes one known key of a mapping. path is the field's full name
// for messages ("dependencies[0].id").
type field struct {
	name   string
	decode func(path string, v *yaml.Node) error
}

// decodeFields walks a mapping by hand rather than with
// yaml.Decoder.KnownFields: the strictness is the same (unknown and repeated
// keys are refused, at every level), but the error can name the field and
// its line instead of a Go type.
func decodeFields(prefix string, n *yaml.Node, fields []field) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &ParseError{Line: n.Line, Field: strings.TrimSuffix(prefix, "."),
			Problem: fmt.Sprintf("must be a mapping (key: value), not a %s", kindName(n))}
	}
	seen := make(map[string]int, len(fields))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return &ParseError{Line: k.Line, Field: strings.TrimSuffix(prefix, "."),
				Problem: "keys must be plain names like \"id\""}
		}
		path := prefix + k.Value
		f, ok := lookup(fields, k.Value)
		if !ok {
			return &ParseError{Line: k.Line, Field: path, Problem: "unknown field; known fields are " + names(fields)}
		}
		if line, dup := seen[k.Value]; dup {
			return &ParseError{Line: k.Line, Field: path, Problem: fmt.Sprintf("given twice (first on line %d)", line)}
		}
		seen[k.Value] = k.Line
		if err := f.decode(path, v); err != nil {
			return err
		}
	}
	return nil
}

func lookup(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func names(fields []field) string {
	s := make([]string, len(fields))
	for i, f := range fields {
		s[i] = f.name
	}
	return strings.Join(s, ", ")
}

func typeError(path string, v *yaml.Node, want string) error {
	if v.Kind == yaml.ScalarNode {
		return &ParseError{Line: v.Line, Field: path, Problem: fmt.Sprintf("must be %s, got %q", want, v.Value)}
	}
	return &ParseError{Line: v.Line, Field: path, Problem: fmt.Sprintf("must be %s, not a %s", want, kindName(v))}
}

func stringField(dst *string) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		if v.Kind != yaml.ScalarNode || v.Decode(dst) != nil {
			return typeError(path, v, "a string")
		}
		return nil
	}
}

func intField(dst *int) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		if v.Kind != yaml.ScalarNode || v.Decode(dst) != nil {
			return typeError(path, v, "a whole number")
		}
		return nil
	}
}

func floatField(dst *float64) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		if v.Kind != yaml.ScalarNode || v.Decode(dst) != nil || math.IsNaN(*dst) || math.IsInf(*dst, 0) {
			return typeError(path, v, "a number")
		}
		return nil
	}
}

func durationField(dst *Duration) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		if err := v.Decode(dst); err != nil {
			return &ParseError{Line: v.Line, Field: path, Problem: err.Error()}
		}
		return nil
	}
}

// listField decodes a YAML list, calling item for each element; null is an
// empty list.
func listField(path string, v *yaml.Node, item func(path string, v *yaml.Node) error) error {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return typeError(path, v, "a list")
	}
	for i, e := range v.Content {
		if err := item(fmt.Sprintf("%s[%d]", path, i), resolve(e)); err != nil {
			return err
		}
	}
	return nil
}

func stringListField(dst *[]string) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		return listField(path, v, func(p string, e *yaml.Node) error {
			var s string
			if err := stringField(&s)(p, e); err != nil {
				return err
			}
			*dst = append(*dst, s)
			return nil
		})
	}
}
