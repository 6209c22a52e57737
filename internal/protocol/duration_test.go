package protocol

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDurationYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: `"90s"`, want: 90 * time.Second},
		{in: "30m", want: 30 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: "120", want: 120 * time.Second},
		{in: "0", want: 0},
		{in: "~", want: 0},
		{in: "-5s", want: -5 * time.Second},
		{in: "ten minutes", wantErr: "not a duration"},
		{in: "1.5", wantErr: "not a duration"},
		{in: "99999999999999999", wantErr: "out of range"},
		{in: "[1, 2]", wantErr: "not a list"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var v struct {
				D Duration `yaml:"d"`
			}
			err := yaml.Unmarshal([]byte("d: "+tt.in), &v)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decode %q: err = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode %q: %v", tt.in, err)
			}
			if time.Duration(v.D) != tt.want {
				t.Fatalf("decode %q = %v, want %v", tt.in, time.Duration(v.D), tt.want)
			}
		})
	}
}

func TestDurationMarshalsAsString(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, 1500 * time.Microsecond, 90 * time.Second, 26*time.Hour + 3*time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			out, err := yaml.Marshal(map[string]Duration{"d": Duration(d)})
			if err != nil {
				t.Fatal(err)
			}
			if want := "d: " + d.String() + "\n"; string(out) != want {
				t.Fatalf("marshal %v = %q, want %q", d, out, want)
			}
			var back map[string]Duration
			if err := yaml.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if back["d"] != Duration(d) {
				t.Fatalf("round trip %v = %v", d, back["d"])
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		50577763 * time.Nanosecond:            "51ms",
		999 * time.Millisecond:                "999ms",
		4249 * time.Millisecond:               "4.2s",
		65*time.Second + 400*time.Millisecond: "1m5s",
		30 * time.Minute:                      "30m0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
