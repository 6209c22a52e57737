package protocol

import (
	"reflect"
	"testing"
)

func fuzzSeeds(f *testing.F, samples ...[]byte) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Add([]byte("---\nid: t1\nrun_id: r1\nattempt: 1\ntitle: x\nstatus: completed\n---\nbody"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\r\nid: t1\r\n...\r\n---\r\n"))
	f.Add([]byte("---\nid: &a t1\nrun_id: *a\nattempt: 0x1\ntitle: |\n\t x\n---\n"))
	f.Add([]byte("\ufeff---\nid: t1\nrun_id: r1\nattempt: 1\ntitle: \"\\t---\\n---\"\ntimeout: 99\n---\n\n---\n"))
}

// FuzzParseCommand: parsing never panics, and whatever is accepted
// marshals and parses back to the same command.
func FuzzParseCommand(f *testing.F) {
	full, err := fullCommand().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	fuzzSeeds(f, full)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommand("", data)
		if err != nil {
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("accepted command does not marshal: %v\ninput: %q", err, data)
		}
		back, err := ParseCommand("", out)
		if err != nil {
			t.Fatalf("marshalled command does not parse: %v\nfile: %q", err, out)
		}
		if !reflect.DeepEqual(c, back) {
			t.Fatalf("round trip differs\n got: %#v\nwant: %#v", back, c)
		}
	})
}

// FuzzParseReport is FuzzParseCommand for reports.
func FuzzParseReport(f *testing.F) {
	full, err := fullReport().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	fuzzSeeds(f, full)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReport("", data)
		if err != nil {
			return
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatalf("accepted report does not marshal: %v\ninput: %q", err, data)
		}
		back, err := ParseReport("", out)
		if err != nil {
			t.Fatalf("marshalled report does not parse: %v\nfile: %q", err, out)
		}
		if !reflect.DeepEqual(r, back) {
			t.Fatalf("round trip differs\n got: %#v\nwant: %#v", back, r)
		}
	})
}
