package layout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codeagent/codeagent/internal/volume"
)

func TestContainerDir(t *testing.T) {
	v, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(v.Attempts(), "r1", "alpha-1")
	for _, d := range []string{v.Workspace(), copyDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The workspace named through a symlink is still the workspace.
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(v.Workspace(), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string
		ok   bool
	}{
		{v.Workspace(), WorkspaceDir, true},
		{link, WorkspaceDir, true},
		{copyDir, VolumesDir + "/attempts/r1/alpha-1", true},
		{v.Attempts(), "", false},
		{filepath.Join(v.Attempts(), "..", "elsewhere"), "", false},
		{t.TempDir(), "", false},
	}
	for _, tc := range tests {
		got, ok := ContainerDir(v, tc.dir)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ContainerDir(%s) = %q, %v; want %q, %v", tc.dir, got, ok, tc.want, tc.ok)
		}
	}
}
