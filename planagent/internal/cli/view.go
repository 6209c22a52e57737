package cli

import (
	"strings"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// viewOptions price runs with the configured model and prices.
func (s *session) viewOptions() runview.Options {
	prices := runview.Prices{}
	for m, p := range s.cfg.Prices {
		prices[m] = runview.Price{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite}
	}
	return runview.Options{Model: s.cfg.Model, Prices: prices}
}

// loadView reads a run's state (the latest run for "") and builds its view.
func (s *session) loadView(runID string) (*runrecord.State, *runview.Run, error) {
	st, err := runrecord.LoadState(s.layout, runID, false)
	if err != nil {
		return nil, nil, cmdutil.UsageError(err)
	}
	return st, runview.Build(st, s.viewOptions()), nil
}

func shortGoal(g string) string {
	g = strings.Join(strings.Fields(g), " ")
	if r := []rune(g); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return g
}

func taskOf(st *runrecord.State, id string) (taskgraph.Task, bool) {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return taskgraph.Task{}, false
}
