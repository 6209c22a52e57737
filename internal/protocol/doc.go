// Package protocol is the file contract between planagent and codingagent.
//
// The two programs talk only through files in the shared volumes tree
// (see package volume for the paths):
//
//	commands/<id>.md   written by planagent, one per task attempt
//	reports/<id>.md    written by codingagent when the attempt ends
//
// Both kinds of file are UTF-8 text: a YAML front matter between two "---"
// lines, then a markdown body.
//
//	---
//	id: t1
//	run_id: r-20260101-1
//	attempt: 1
//	title: Add a /health endpoint
//	dependencies:
//	    - id: t0
//	      summary: Created the HTTP server skeleton in cmd/server.
//	resources: [cmd/server/main.go]
//	hints: [Reuse the existing router.]
//	acceptance: [go test ./... passes]
//	timeout: 30m
//	---
//
//	<markdown body: the task description>
//
// # Framing
//
// The file must start with a line that is exactly "---" (an optional UTF-8
// byte order mark and "\r\n" line ends are accepted). The front matter ends at
// the next line that is exactly "---"; everything after that line is the body,
// so the body may itself contain "---" lines. One empty line directly after
// the closing "---" is a separator and not part of the body; writers always
// put one there. A file larger than MaxFileSize (1 MiB) is refused.
//
// # Command fields
//
//	id            required  task id (see ValidateID); must equal the file name without ".md"
//	run_id        required  id of the planagent run (see ValidateID)
//	attempt       required  1 for the first attempt, +1 for every retry
//	title         required  one-line title
//	dependencies  optional  list of {id, summary}: finished tasks this one builds on
//	resources     optional  list of workspace-relative paths worth reading first
//	hints         optional  list of strings
//	acceptance    optional  list of acceptance criteria
//	timeout       optional  how long the attempt may take (see Duration); absent or 0 = the watcher's default
//
// The body is the task description.
//
// # Report fields
//
//	id             required  the command's id; must equal the file name without ".md"
//	run_id         required  the command's run_id
//	attempt        required  the command's attempt
//	status         required  completed, failed or interrupted
//	summary        optional  what was done, for the planner and for dependent tasks
//	files_changed  optional  workspace-relative paths written or edited
//	tokens         optional  {prompt, completion}: tokens used, both >= 0
//	duration       optional  wall time of the attempt
//	error          optional  why the attempt failed or was interrupted
//
// The body holds details (for example the final answer of the model).
// A report answers the command with the same id, run_id and attempt; a
// reader ignores a report whose run_id or attempt differs from the command it
// waits for, since that is a leftover of an earlier attempt or run.
//
// # Strictness
//
// Parsing is strict so that a bad file is reported, not half understood:
// missing or unterminated front matter, a field this package does not know
// (also inside dependencies and tokens), a value of the wrong type, a field
// given twice, a missing required field, an invalid id (also in
// dependencies), an id that does not match the file name, a negative timeout,
// duration or token count, and an oversized file are all a *ParseError that
// names the file, the field and the problem. Marshal refuses what Parse would
// refuse, and Parse(Marshal(x)) == x for every x that Marshal accepts.
//
// # Durations
//
// Durations are Go duration strings ("90s", "30m", "1h30m"); a whole number is
// read as seconds. They are written as strings.
//
// # Writing and watching
//
// Writers use WriteFileAtomic: the content goes to a temporary file in the
// same directory, named ".<name>.tmp-<random>", which is fsynced and renamed
// over the final name. A watcher therefore sees the final name only once the
// content is complete, and ignores every name for which IsTempName is true
// (all names starting with ".").
package protocol
