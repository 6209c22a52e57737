// Package runtime holds no code: its packages run the codingagent that
// carries out each task attempt, each behind the orchestrator's Runtime
// interface (orchestrator.Runtime, documented where it is consumed), and
// cli builds the one configured.
//
//   - docker: a container of its own per attempt through the Docker
//     engine, or a compose watcher found alive; acceptance commands in a
//     fresh container; the start-of-run boundary probe; the model gateway
//     and egress proxy on each container's socket. The only package that
//     links the Docker client.
//   - kube: a Job per attempt on a cluster, inputs and results over
//     pods/exec, a NetworkPolicy and the egress proxy under closed
//     egress. The only package that links client-go.
//   - local: `codingagent watch` as a subprocess of this host.
//
// What they share, in packages that link neither engine's client:
//
//   - attempt: what the orchestrator and a runtime exchange (Attempt,
//     Exit, ExecResult).
//   - layout: an attempt's container as both container runtimes make it:
//     paths, labels, default image, stop and exec limits.
//   - boundary: the boundary probe's verdict, report and canary.
//   - output: bounded output (a tail, a capped file), a locked writer,
//     the key's redaction.
//   - heartbeat: a live watcher told from a dead one; a heartbeat kept on
//     the host for an agent that writes its own elsewhere.
//   - agentlog, agentbin: the agent's output in planagent's log; finding
//     the codingagent binary.
//   - runtimetest: the runtimes' test helpers.
package runtime
