package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"
)

// NewJSONEncoder is the encoder for every JSON the programs print or serve:
// without HTML escaping, so a goal "a > b & c" reads as written and not as
// "a \u003e b \u0026 c" (encoding/json's default, meant for HTML pages).
func NewJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// WriteJSON writes v to w indented by two spaces, ending in a newline: the
// shape of the --json outputs.
func WriteJSON(w io.Writer, v any) error {
	enc := NewJSONEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// MarshalJSON is json.Marshal without HTML escaping: one line, no newline.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := NewJSONEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
