package config

import (
	"strconv"
	"testing"
)

// The docs' settings table is Settings: a key Load reads must be in it, in
// Keys' order, with its help.
func TestSettingsCoverEveryKey(t *testing.T) {
	keys := Keys()
	settings := Settings()
	if len(settings) != len(keys) {
		t.Fatalf("%d settings for %d keys", len(settings), len(keys))
	}
	for i, s := range settings {
		if s.Key != keys[i] {
			t.Errorf("setting %d is %s, key %s", i, s.Key, keys[i])
		}
		if s.Usage == "" {
			t.Errorf("%s has no help", s.Key)
		}
	}
	d := Defaults()
	for _, s := range settings {
		if s.Key == "parallel" && s.Default != strconv.Itoa(d.Parallel) {
			t.Errorf("parallel's default shown as %q; Defaults has %d", s.Default, d.Parallel)
		}
	}
}
