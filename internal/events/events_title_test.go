package events

import "testing"

// A title is cut at a word's end with an ellipsis, never inside a word,
// and never leaves a `code span` open.
func TestTitle(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"Short title", 72, "Short title"},
		{"Add a --verbose flag to the command line parser and document it in the README", 40, "Add a --verbose flag to the command…"},
		{"Rename `parseConfigurationFile` to `parseConfig` everywhere in the package", 40, "Rename `parseConfigurationFile` to…"},
		{"Rename `aVeryLongIdentifierName_with_no_spaces` now", 30, "Rename…"},
		{"Make   the\nwhitespace   one", 72, "Make the whitespace one"},
		{"Supercalifragilisticexpialidocious-words-without-spaces", 20, "Supercalifragilisti…"},
	}
	for _, c := range cases {
		got := Title(c.in, c.n)
		if got != c.want {
			t.Errorf("Title(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if r := []rune(got); len(r) > c.n {
			t.Errorf("Title(%q, %d) is %d runes", c.in, c.n, len(r))
		}
	}
}
