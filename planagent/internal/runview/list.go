package runview

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// Row is one run in the list of runs.
type Row struct {
	ID      string         `json:"id"`
	Goal    string         `json:"goal"`
	Status  string         `json:"status"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	Tasks   int            `json:"tasks"`
	Counts  map[string]int `json:"counts"`
	Tokens  Tokens         `json:"tokens"`
	CostUSD *float64       `json:"cost_usd,omitempty"`
	// Stop is why the run ended (omitted while it runs).
	Stop *runrecord.Stop `json:"stop_reason,omitempty"`
	// Error says why the run's state could not be read; the other fields
	// but ID are then empty.
	Error string `json:"error,omitempty"`
}

// RowOf is the list row of a run.
func RowOf(r *Run) Row {
	return Row{ID: r.ID, Goal: r.Goal, Status: r.Status, Created: r.Created, Updated: r.Updated, Stop: r.Stop,
		Tasks: len(r.Tasks), Counts: r.Counts, Tokens: r.Tokens, CostUSD: r.CostUSD}
}

// List is every run under the volumes, newest first. A run whose state
// cannot be read is listed with its error rather than hidden.
func List(l volume.Layout, opts Options) ([]Row, error) {
	entries, err := os.ReadDir(l.Runs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list runs in %s: %w", l.Runs(), err)
	}
	rows := []Row{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		st, err := runrecord.LoadState(l, e.Name(), false)
		if err != nil {
			rows = append(rows, Row{ID: e.Name(), Error: err.Error()})
			continue
		}
		rows = append(rows, RowOf(Build(st, opts)))
	}
	// Run ids start with their UTC start time, so the name orders them.
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID > rows[j].ID })
	return rows, nil
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
