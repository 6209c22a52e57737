package docker

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// engineRemoveErr is the error the real client returns for a forced
// DELETE /containers/ID the engine answers with status and message (the
// engine's JSON error body, as Docker 20.10 sends it).
func engineRemoveErr(t *testing.T, status int, message string) error {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Api-Version", "1.41")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":` + strings.ReplaceAll(`"`+message+`"`, "\n", " ") + `}`))
	}))
	t.Cleanup(ts.Close)
	cli, err := client.New(client.WithHost("tcp://"+strings.TrimPrefix(ts.URL, "http://")), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	_, err = cli.ContainerRemove(t.Context(), "0123456789ab", client.ContainerRemoveOptions{Force: true})
	if err == nil {
		t.Fatalf("the fake engine's %d was no error", status)
	}
	return err
}

// What the engine says to a forced removal, classified by the real
// client: gone and going are done, anything else is an error.
func TestRemovedClassifiesEngineAnswers(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		message string
		want    bool
	}{
		{"already in progress (409, Docker 20.10+)", http.StatusConflict, "removal of container 0123456789ab is already in progress", true},
		{"already in progress (400, API 1.24)", http.StatusBadRequest, "removal of container 0123456789ab is already in progress", true},
		{"no such container", http.StatusNotFound, "No such container: 0123456789ab", true},
		{"another conflict", http.StatusConflict, "You cannot remove a running container 0123456789ab. Stop the container before attempting removal or force remove", false},
		{"engine failure", http.StatusInternalServerError, "could not kill running container 0123456789ab, cannot remove - permission denied", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := engineRemoveErr(t, tc.status, tc.message)
			if got := removed(err); got != tc.want {
				t.Errorf("removed(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
	if !removed(nil) {
		t.Error("removed(nil) = false")
	}
}

// Start's leftover clean-up goes on when Docker is already removing a
// leftover (another run's clean-up, the container's own) once that
// removal has finished, or when it is gone by the time it is asked, and
// still fails on a real error, naming it.
func TestDockerFakeLeftoverRemovalInProgress(t *testing.T) {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	leftover := func(id string) containertypes.Summary {
		return containertypes.Summary{ID: id, State: containertypes.StateExited,
			Labels: map[string]string{layout.LabelManaged: "true", layout.LabelVolumes: l.Root, layout.LabelRun: "r0"}}
	}
	inProgress := engineRemoveErr(t, http.StatusConflict, "removal of container aaaaaaaaaaaa is already in progress")
	gone := engineRemoveErr(t, http.StatusNotFound, "No such container: bbbbbbbbbbbb")
	broken := engineRemoveErr(t, http.StatusInternalServerError, "driver failed to remove root filesystem")
	newDocker := func(fake *fakeEngine) *Docker {
		return &Docker{api: fake, opts: Options{Volumes: l, Image: "img:test", RunID: "r1", Binary: "/opt/codingagent", UID: 1000, GID: 1000},
			log: slog.New(slog.DiscardHandler), exited: make(chan Exit, 16), attempts: make(map[string]*agentContainer)}
	}

	fake := newFakeEngine()
	fake.list = []containertypes.Summary{leftover("aaaaaaaaaaaa"), leftover("bbbbbbbbbbbb"), leftover("cccccccccccc")}
	fake.removeErr = map[string]error{"aaaaaaaaaaaa": inProgress, "bbbbbbbbbbbb": gone}
	for _, c := range fake.list {
		fake.containers[c.ID] = &fakeContainer{result: make(chan containertypes.WaitResponse, 1), errs: make(chan error, 1)}
	}
	d := newDocker(fake)
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start with removals in progress: %v", err)
	}
	_ = d.Stop(t.Context())
	if len(fake.removed) != 1 || fake.removed[0] != "cccccccccccc" {
		t.Errorf("removed %v, want the third leftover after the two others", fake.removed)
	}
	// A run must not start (nor end) with a container still "removing":
	// the one whose removal was under way is waited for.
	if len(fake.removedWaits) != 1 || fake.removedWaits[0] != "aaaaaaaaaaaa" {
		t.Errorf("waited for the removal of %v, want only the one under way elsewhere", fake.removedWaits)
	}

	fake = newFakeEngine()
	fake.list = []containertypes.Summary{leftover("dddddddddddd")}
	fake.removeErr = map[string]error{"dddddddddddd": broken}
	err = newDocker(fake).Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "remove leftover container dddddddddddd of run r0") || !strings.Contains(err.Error(), "driver failed") {
		t.Errorf("Start with a failed removal = %v", err)
	}
}
