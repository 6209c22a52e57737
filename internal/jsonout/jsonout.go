// Package jsonout writes the JSON the programs print (--json) and serve
// (the web UI): without HTML escaping. It is apart from cmdutil so that
// the web UI does not link the commands' plumbing.
package jsonout

import (
	"bytes"
	"encoding/json"
	"io"
)

// NewEncoder is the encoder for every JSON the programs print or serve:
// without HTML escaping, so a goal "a > b & c" reads as written and not as
// "a \u003e b \u0026 c" (encoding/json's default, meant for HTML pages).
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Write writes v to w indented by two spaces, ending in a newline: the
// shape of the --json outputs.
func Write(w io.Writer, v any) error {
	enc := NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Marshal is json.Marshal without HTML escaping: one line, no newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
