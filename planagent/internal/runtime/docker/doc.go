// Package docker is the Docker runtime: each task attempt's codingagent in
// a container of its own through the Docker engine (New, Docker), or the
// commands served by a compose watcher found alive; acceptance commands in
// a fresh container of the same image; the start-of-run preflight and
// boundary probe; the model gateway and the egress proxy on each
// container's socket under closed egress. The orchestrator drives it
// through its own Runtime interface (orchestrator.Runtime); cli builds it.
//
// It is the only package that links the Docker client (depguard's
// docker-client rule). What it shares with the kubernetes runtime is in
// runtime/layout, boundary, output and heartbeat.
package docker
