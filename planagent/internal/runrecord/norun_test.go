package runrecord

import (
	"errors"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/volume"
)

// A run that is not under these volumes names --volumes as the way to the
// dir it is in, named or not.
func TestNoRunNamesVolumes(t *testing.T) {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run-20260101-000000-0001", ""} {
		_, err := LoadState(l, id, true)
		if !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), "--volumes") {
			t.Errorf("LoadState(%q) = %v, want ErrNoRun naming --volumes", id, err)
		}
	}
}
