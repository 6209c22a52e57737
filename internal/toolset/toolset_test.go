package toolset

import (
	"slices"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/mcp/mcptest"
	"github.com/codeagent/codeagent/internal/tools"
)

func workspace(t *testing.T) *tools.Workspace {
	t.Helper()
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// The planner's set looks and never changes; the agent's set changes
// files and runs commands; repo_map is in either only while the map is on.
func TestNewBuildsThePlannersAndTheAgentsSet(t *testing.T) {
	t.Parallel()
	ws := workspace(t)
	tests := []struct {
		name     string
		o        Options
		want     []string
		wantNone []string
	}{
		{"planner", Options{Workspace: ws, ReadOnly: true, RepoMapTokens: 1024},
			[]string{"read_file", "list_dir", "glob", "grep", "repo_map"}, []string{"write_file", "edit_file", "shell_exec"}},
		{"planner without the map", Options{Workspace: ws, ReadOnly: true},
			[]string{"read_file", "grep"}, []string{"repo_map", "shell_exec"}},
		{"agent", Options{Workspace: ws, RepoMapTokens: 1024},
			[]string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "shell_exec", "repo_map"}, nil},
		{"agent without the map", Options{Workspace: ws},
			[]string{"write_file", "shell_exec"}, []string{"repo_map"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := New(tt.o).Names()
			for _, n := range tt.want {
				if !slices.Contains(names, n) {
					t.Errorf("%s not in %v", n, names)
				}
			}
			for _, n := range tt.wantNone {
				if slices.Contains(names, n) {
					t.Errorf("%s in %v", n, names)
				}
			}
		})
	}
}

// The map the prompt gets is the one the repo_map tool draws: same root,
// exclusions, cache and budget.
func TestMapIsTheToolsMap(t *testing.T) {
	t.Parallel()
	ws := workspace(t)
	ws.Exclude("volumes")
	o := Options{Workspace: ws, RepoMapTokens: 512, RepoMapCache: "/cache"}
	m := o.Map([]string{"the goal"})
	if m.Root != ws.Root() || m.CacheDir != "/cache" || m.Tokens != 512 || !slices.Equal(m.Boost, []string{"the goal"}) ||
		!slices.Equal(m.Exclude, ws.ExcludePatterns()) || len(m.Exclude) == 0 {
		t.Errorf("Map = %+v", m)
	}
}

// The planner gets only the MCP tools marked read-only, the agent all of
// them; nothing configured changes nothing.
func TestWithMCP(t *testing.T) {
	t.Parallel()
	ts := mcptest.NewHTTP(t, "")
	cfg := config.Config{MCPServers: map[string]config.MCPServer{"docs": {URL: ts.URL}}}
	for _, readOnly := range []bool{true, false} {
		ws := workspace(t)
		servers := Servers(cfg, ws.Root(), func(string) string { return "" })
		t.Cleanup(func() { _ = servers.Close() })
		var warned []string
		set, err := WithMCP(t.Context(), New(Options{Workspace: ws, ReadOnly: readOnly}), servers, readOnly,
			func(line string) { warned = append(warned, line) })
		if err != nil {
			t.Fatalf("readOnly %v: %v (warnings %v)", readOnly, err, warned)
		}
		names := strings.Join(set.Names(), ",")
		if !strings.Contains(names, "mcp__docs__echo") || !strings.Contains(names, "read_file") {
			t.Errorf("readOnly %v: %s", readOnly, names)
		}
		if got := strings.Contains(names, "mcp__docs__write_note"); got == readOnly {
			t.Errorf("readOnly %v: write_note offered %v: %s", readOnly, got, names)
		}
	}
	ws := workspace(t)
	base := New(Options{Workspace: ws})
	set, err := WithMCP(t.Context(), base, Servers(config.Config{}, ws.Root(), nil), false, func(line string) { t.Error(line) })
	if err != nil || set != base {
		t.Errorf("no servers: %v, set changed %v", err, set != base)
	}
}
