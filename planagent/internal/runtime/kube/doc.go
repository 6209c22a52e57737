// Package kube is the Kubernetes runtime: each task attempt a Job on a
// cluster (New, Kube), its inputs streamed into the pod and its results
// back over pods/exec, a Secret for what must not be in a Job's spec, a
// NetworkPolicy and the egress proxy under closed egress, and Jobs found
// running adopted by a resumed run. The orchestrator drives it through its
// own Runtime interface (orchestrator.Runtime); cli builds it.
//
// It is the only package that links client-go (depguard's kube-client
// rule); the tests that use client-go's typed fakes carry the clientgo
// build tag, which keeps them out of the -short loop. What it shares with
// the docker runtime is in runtime/layout, boundary, output and heartbeat.
package kube
