package protocol

import "testing"

func BenchmarkParseCommand(b *testing.B) {
	data, err := fullCommand().Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCommand("t2.md", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalCommand includes the style check of every string and the
// read-back check.
func BenchmarkMarshalCommand(b *testing.B) {
	c := fullCommand()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
}
