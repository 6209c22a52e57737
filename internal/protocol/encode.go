package protocol

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The front matter is built as a yaml.Node tree by hand rather than with
// yaml.Marshal of the struct, because yaml.v3 picks block styles for some
// strings that its own parser then rejects or alters (a multi-line string
// whose first line starts with a tab, for one). Building the nodes lets each
// string get a style that is checked to read back exactly.

// mapping is a YAML mapping under construction, in field order.
type mapping struct{ n *yaml.Node }

func newMapping() mapping { return mapping{&yaml.Node{Kind: yaml.MappingNode}} }

func (m mapping) add(key string, v *yaml.Node) {
	m.n.Content = append(m.n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func (m mapping) str(key, v string) { m.add(key, stringNode(v)) }
func (m mapping) integer(key string, v int) {
	m.add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)})
}
func (m mapping) float(key string, v float64) {
	m.add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(v, 'g', -1, 64)})
}
func (m mapping) duration(key string, d Duration) {
	m.add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String()})
}
func (m mapping) list(key string, vs []string) {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, v := range vs {
		seq.Content = append(seq.Content, stringNode(v))
	}
	m.add(key, seq)
}

// stringNode returns a scalar that reads back as exactly s.
func stringNode(s string) *yaml.Node {
	if !utf8.ValidString(s) {
		// YAML text must be UTF-8; !!binary is how YAML carries other bytes,
		// and yaml.v3 decodes it back into a string.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!binary", Value: base64.StdEncoding.EncodeToString([]byte(s))}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if !scalarRoundTrips(n) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// scalarRoundTrips emits n nested in a list in a mapping, the deepest
// indentation our files use (indentation is what goes wrong), and reads it
// back.
func scalarRoundTrips(n *yaml.Node) bool {
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "k"},
		{Kind: yaml.SequenceNode, Content: []*yaml.Node{
			{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "k"}, n}},
		}},
	}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return false
	}
	var back struct {
		K []struct {
			K string `yaml:"k"`
		} `yaml:"k"`
	}
	if yaml.Unmarshal(data, &back) != nil || len(back.K) != 1 {
		return false
	}
	return back.K[0].K == n.Value
}

// encodeFile renders the front matter and the body as a protocol file.
func encodeFile(header mapping, body string) ([]byte, error) {
	y, err := yaml.Marshal(header.n)
	if err != nil {
		return nil, fmt.Errorf("encode front matter: %w", err)
	}
	var out bytes.Buffer
	out.Grow(len(y) + len(body) + 10)
	out.WriteString(delimiter + "\n")
	out.Write(y)
	out.WriteString(delimiter + "\n\n")
	out.WriteString(body)
	if out.Len() > MaxFileSize {
		return nil, &ParseError{Problem: fmt.Sprintf("encoded file is %d bytes, larger than the %d-byte (1 MiB) limit: shorten the body", out.Len(), MaxFileSize)}
	}
	return out.Bytes(), nil
}
