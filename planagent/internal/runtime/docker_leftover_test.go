package runtime

import (
	"log/slog"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/codeagent/codeagent/internal/volume"
)

// TestIsLeftover covers the leftover rule without an engine, including the
// states a real engine shows only for an instant (created, between another
// run's create and start) or after a crash long ago.
func TestIsLeftover(t *testing.T) {
	ours := t.TempDir()
	other := t.TempDir()
	gone := ours + "/gone"
	now := time.Now()
	d := &Docker{opts: DockerOptions{Volumes: volume.Layout{Root: ours}}, log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		name    string
		vols    string
		state   containertypes.ContainerState
		created time.Time
		want    bool
	}{
		{"running on our volumes", ours, containertypes.StateRunning, now, true},
		{"exited on our volumes", ours, containertypes.StateExited, now, true},
		{"running on other volumes", other, containertypes.StateRunning, now.Add(-time.Hour), false},
		{"running on volumes that are gone", gone, containertypes.StateRunning, now, true},
		{"just created on other volumes", other, containertypes.StateCreated, now.Add(-2 * time.Second), false},
		{"created long ago on other volumes", other, containertypes.StateCreated, now.Add(-10 * time.Minute), true},
		{"exited on other volumes", other, containertypes.StateExited, now, true},
		{"dead on other volumes", other, containertypes.StateDead, now, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := containertypes.Summary{
				State:   tc.state,
				Created: tc.created.Unix(),
				Labels:  map[string]string{LabelManaged: "true", LabelVolumes: tc.vols},
			}
			if got := d.isLeftover(c, now); got != tc.want {
				t.Errorf("isLeftover = %v, want %v", got, tc.want)
			}
		})
	}
}
