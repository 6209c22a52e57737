// Package tools holds the coding tools the model calls (read_file,
// write_file, edit_file, list_dir, glob, grep, shell_exec, repo_map; each
// described to the model by its *.md file), each confined to a workspace.
// planagent uses the read-only ones.
package tools

import (
	"context"
	"encoding/json"

	"github.com/codeagent/codeagent/internal/llm"
)

// Tool is one callable tool.
type Tool interface {
	Name() string
	// Definition is the schema offered to the model.
	Definition() llm.Tool
	// ReadOnly tools never change the workspace (plan mode offers only these).
	ReadOnly() bool
	// Run executes one call. Problems the model should fix (bad arguments, a
	// path outside the workspace, an edit whose old_string is not found) come
	// back as Result{IsError: true}; a search that finds nothing is a normal
	// result. The error return is for infrastructure failures and
	// cancellation only.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call returns to the model.
type Result struct {
	Content string
	IsError bool
	// Files the call read or changed (workspace-relative), for de-duplication
	// and the report's files-changed list.
	Files []FileRef
}

// FileRef names a file touched by a call.
type FileRef struct {
	Path    string // workspace-relative, slash-separated
	Changed bool   // written or edited (not just read)
}
