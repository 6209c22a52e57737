package watch

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/protocol"
)

// unknownRun stands in for the run id of a command too broken to name its
// run: a report must carry a valid run id, and planagent matches on it.
const unknownRun = "unknown"

// readCommand reads the claimed file at path but parses it under name (the
// commands/<id>.md the user or planagent wrote), so errors point there.
// The raw bytes come back too, for failedReport.
func readCommand(path, name string) (*protocol.Command, []byte, error) {
	// A FIFO or a symbolic link put in commands/ is refused without blocking
	// or following it: the command then gets a failed report.
	data, err := protocol.ReadRegular(path, protocol.MaxFileSize+1)
	if err != nil {
		return nil, nil, fmt.Errorf("read command %s: %w", name, err)
	}
	cmd, err := protocol.ParseCommand(name, data)
	return cmd, data, err
}

// failedReport answers a command that could not be parsed. The run id and
// attempt are taken from the front matter when they are readable there, so
// planagent can match the report to the command it waits for.
func failedReport(stem string, data []byte, err error) *protocol.Report {
	runID, attempt := salvageIDs(data)
	id, _, _ := protocol.SplitStem(stem) // the claim's name was checked
	return &protocol.Report{ID: id, RunID: runID, Attempt: attempt, Status: protocol.StatusFailed,
		Summary: "invalid command file: " + summarize(err.Error()), Error: err.Error()}
}

// salvageIDs reads run_id and attempt leniently from a front matter that
// may be broken elsewhere.
func salvageIDs(data []byte) (string, int) {
	runID, attempt := unknownRun, 1
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(bytes.TrimPrefix(data, []byte("\ufeff")), []byte("---\n"))
	if !ok {
		return runID, attempt
	}
	header, _, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return runID, attempt
	}
	var v struct {
		RunID   any `yaml:"run_id"`
		Attempt any `yaml:"attempt"`
	}
	if yaml.Unmarshal(header, &v) != nil {
		return runID, attempt
	}
	if s, ok := v.RunID.(string); ok && protocol.ValidateID(s) == nil {
		runID = s
	}
	if n, ok := v.Attempt.(int); ok && n >= 1 {
		attempt = n
	}
	return runID, attempt
}
