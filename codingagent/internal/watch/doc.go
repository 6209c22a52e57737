// Package watch is `codingagent watch`: it carries out every command file
// planagent drops into <volumes>/commands and writes one report per command
// into <volumes>/reports. It replaces the seed's monitor.sh.
//
// # Pick-up
//
// The commands directory is watched with fsnotify (the directory, never the
// files) and scanned once right after the watch is added, again on
// ErrEventOverflow and by a periodic reconcile (every 5s) because events do
// not cross every bind mount. Only "<id>.md" names are commands; names that
// start with "." and temp names (protocol.IsTempName) are ignored, since
// writers create a temp file and rename it into place. When events are not
// delivered at all (Docker Desktop, NFS) the watcher notices: at start it
// writes a probe file (".probe-<watcher>") and waits up to 2s for its event;
// without one it polls every second. Options.Poll > 0 forces polling.
//
// # Claims
//
// A command is claimed by renaming commands/<id>.md to
// commands/.claimed/<id>.md: rename is atomic within one filesystem, so of
// several watchers on one volume exactly one wins and the others get ENOENT.
// A watcher claims only when it has a free slot (Options.Concurrency), so a
// busy watcher leaves work to idle ones. The winner then writes
// .claimed/<id>.owner.json (watcher id, pid, host, time) and parses the
// command. A garbage, half-written or invalid command becomes a failed
// report naming the file, the field and the problem; a file name that is not
// a valid id is moved aside to .claimed/<name>.invalid and logged. Neither
// stops the watcher. Once the report is written the claim files are removed.
//
// # Heartbeats and recovery
//
// Every watcher rewrites reports/.watchers/<watcher-id>.json (atomically)
// every Options.Heartbeat with the ids it is running, and removes it on a
// graceful exit; `codingagent health` reads these files. At start and on
// each reconcile, claims whose owner has no heartbeat fresher than
// Options.StaleAfter are retaken: the claim is renamed to
// .claimed/<id>.md.retake-<our-id> (again, one winner), rewritten as
// commands/<id>.md with attempt+1 and picked up as usual, so the agent
// runner resumes the task's session. Past Options.MaxAttempts the command
// gets a failed report ("abandoned after N attempts") instead. A claim whose
// report for the same run and attempt already exists (the watcher died
// between writing the report and removing the claim) is just removed.
//
// # Shutdown
//
// When the context passed to Run is cancelled (SIGTERM/SIGINT in the CLI)
// the watcher stops claiming, gives running tasks Options.Grace to finish,
// then cancels them. A cancelled task gets a report with status
// "interrupted" and its claim is removed; the command is not put back.
// planagent treats an interrupted report as "not done" and dispatches the
// task again, which keeps a single owner of re-dispatch decisions (putting
// the command back as well would run it twice). Run then returns nil.
//
// Owner files and heartbeats are replaced atomically (temp file + rename)
// but not fsynced: after a power loss they may be old or missing, which
// only makes a claim look stale sooner, and an fsync on the pick-up path
// would cost milliseconds per command. Commands and reports are fsynced
// (protocol.WriteFileAtomic).
//
// # Per command
//
// The context layers are combined (layers.Combine with the runtime dir
// <volumes>/context and the templates built into the binary by default),
// events are appended as JSON lines to reports/<id>.events.jsonl and logged,
// the TaskRunner carries the command out, and the report is written
// atomically with the status, a summary (first paragraph of the answer),
// the answer as body, tokens, duration, files changed and the error. A
// command's timeout (else Options.TaskTimeout) ends it as failed; a panic
// in the runner fails that task only.
// AgentRunner is the real TaskRunner: one agent per command, its session
// kept at <volumes>/context/sessions/<run-id>--<task-id>.jsonl so that a
// later attempt continues the conversation instead of starting over.
package watch
