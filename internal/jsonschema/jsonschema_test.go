package jsonschema_test

import (
	"encoding/json"
	"testing"

	"github.com/codeagent/codeagent/internal/jsonschema"
)

type params struct {
	Path   string   `json:"path" description:"file to read"`
	Start  int      `json:"start_line,omitempty"`
	Mode   string   `json:"mode,omitempty" enum:"a,b"`
	Globs  []string `json:"globs,omitempty"`
	Exact  *bool    `json:"exact,omitempty"`
	Nested struct {
		Ratio float64 `json:"ratio"`
	} `json:"nested,omitempty"`
	Ignored string `json:"-"`
	hidden  string //nolint:unused // read only through reflection: For must leave unexported fields out of the schema
}

func TestFor(t *testing.T) {
	s, err := jsonschema.For[params]()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"object","properties":{` +
		`"exact":{"type":"boolean"},` +
		`"globs":{"type":"array","items":{"type":"string"}},` +
		`"mode":{"type":"string","enum":["a","b"]},` +
		`"nested":{"type":"object","properties":{"ratio":{"type":"number"}},"required":["ratio"],"additionalProperties":false},` +
		`"path":{"type":"string","description":"file to read"},` +
		`"start_line":{"type":"integer"}},` +
		`"required":["path"],"additionalProperties":false}`
	if string(raw) != want {
		t.Errorf("schema =\n%s\nwant\n%s", raw, want)
	}
}

func TestForRejectsWhatJSONSchemaCannotSay(t *testing.T) {
	if _, err := jsonschema.For[string](); err == nil {
		t.Error("For[string]: no error, want one (arguments are an object)")
	}
	if _, err := jsonschema.For[struct {
		F map[string]int `json:"f"`
	}](); err == nil {
		t.Error("a map field: no error, want one")
	}
}
