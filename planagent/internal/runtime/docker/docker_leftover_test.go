package docker

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// leftoverVolumes are the volumes of run r1 (ours), with run "live" holding
// its lock there and run "dead" having held it, plus another volumes dir
// that exists and one that is gone.
type leftoverVolumes struct {
	ours        volume.Layout
	other, gone string
}

func newLeftoverVolumes(t *testing.T) leftoverVolumes {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	live, err := runlock.Acquire(l.Run("live"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.Release)
	dead, err := runlock.Acquire(l.Run("dead"))
	if err != nil {
		t.Fatal(err)
	}
	dead.Release()
	return leftoverVolumes{ours: l, other: t.TempDir(), gone: l.Root + "/gone"}
}

// TestIsLeftover covers the leftover rule without an engine: only the
// containers of a run that is provably dead go, in any state.
func TestIsLeftover(t *testing.T) {
	v := newLeftoverVolumes(t)
	ours := v.ours.Root
	d := &Docker{opts: Options{Volumes: v.ours, RunID: "r1"}, log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		name  string
		vols  string
		run   string
		state containertypes.ContainerState
		want  bool
	}{
		{"our run's, running (a resume)", ours, "r1", containertypes.StateRunning, true},
		{"our run's, exited (a resume)", ours, "r1", containertypes.StateExited, true},
		{"a live run's on our volumes, exited (its acceptance output unread)", ours, "live", containertypes.StateExited, false},
		{"a live run's on our volumes, running", ours, "live", containertypes.StateRunning, false},
		{"a live run's on our volumes, just created", ours, "live", containertypes.StateCreated, false},
		{"a dead run's on our volumes, running", ours, "dead", containertypes.StateRunning, true},
		{"a dead run's on our volumes, exited", ours, "dead", containertypes.StateExited, true},
		{"a run's that never locked on our volumes", ours, "never", containertypes.StateExited, true},
		{"a label that is no run id", ours, "../live", containertypes.StateExited, true},
		{"on other volumes, exited", v.other, "live", containertypes.StateExited, false},
		{"on other volumes, dead", v.other, "x", containertypes.StateDead, false},
		{"on other volumes, running", v.other, "x", containertypes.StateRunning, false},
		{"on other volumes, created", v.other, "x", containertypes.StateCreated, false},
		{"on volumes that are gone, running", v.gone, "x", containertypes.StateRunning, true},
		{"on volumes that are gone, exited", v.gone, "x", containertypes.StateExited, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := containertypes.Summary{
				ID:     "0123456789ab",
				State:  tc.state,
				Labels: map[string]string{layout.LabelManaged: "true", layout.LabelVolumes: tc.vols, layout.LabelRun: tc.run},
			}
			got, err := d.isLeftover(c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("isLeftover = %v, want %v", got, tc.want)
			}
		})
	}
}

// removalLog records every removal the runtime asks of the fake engine,
// including of containers the fake only lists.
type removalLog struct {
	*fakeEngine
	mu  sync.Mutex
	ids []string
}

func (r *removalLog) ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
	return r.fakeEngine.ContainerRemove(ctx, id, opts)
}

// TestDockerFakeStartSparesLiveRunsContainers: a run starting on an engine
// that other runs share removes its own earlier containers and those of dead
// runs, and leaves a live run's exited acceptance container (whose output
// that run has yet to read) and everything of another existing volumes dir.
func TestDockerFakeStartSparesLiveRunsContainers(t *testing.T) {
	v := newLeftoverVolumes(t)
	ours := v.ours.Root
	summary := func(id, vols, run string, state containertypes.ContainerState) containertypes.Summary {
		return containertypes.Summary{ID: id, State: state,
			Labels: map[string]string{layout.LabelManaged: "true", layout.LabelVolumes: vols, layout.LabelRun: run, layout.LabelRole: "exec"}}
	}
	fake := newFakeEngine()
	fake.list = []containertypes.Summary{
		summary("own", ours, "r1", containertypes.StateExited),
		summary("live-acceptance", ours, "live", containertypes.StateExited),
		summary("live-agent", ours, "live", containertypes.StateRunning),
		summary("dead-agent", ours, "dead", containertypes.StateRunning),
		summary("other-acceptance", v.other, "x", containertypes.StateExited),
		summary("gone-agent", v.gone, "x", containertypes.StateRunning),
		summary("never-agent", ours, "never", containertypes.StateExited),
	}
	log := &removalLog{fakeEngine: fake}
	d := &Docker{api: log, opts: Options{Volumes: v.ours, Image: "img:test", RunID: "r1", Binary: "/opt/codingagent", UID: 1000, GID: 1000},
		log: slog.New(slog.DiscardHandler), exited: make(chan Exit, 16), attempts: make(map[string]*agentContainer)}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.WithoutCancel(t.Context())) })
	slices.Sort(log.ids)
	if want := []string{"dead-agent", "gone-agent", "never-agent", "own"}; !slices.Equal(log.ids, want) {
		t.Errorf("removed %v, want %v", log.ids, want)
	}
	// The probe of the live run's lock neither took it nor left it taken.
	if _, err := runlock.Acquire(v.ours.Run("live")); err == nil {
		t.Error("the live run's lock was free after Start")
	}
	if _, err := os.Stat(v.ours.Run("never")); !os.IsNotExist(err) {
		t.Errorf("a run dir appeared: %v", err)
	}
}
