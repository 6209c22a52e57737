#!/usr/bin/env bash
# The benchmarks behind docs/benchmarks.md, each with the iteration count
# its metric needs (percentiles want hundreds of samples; a 100-task run or a
# cold map of the Go standard library wants a few).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench.out}
: >"$out"
# The machine and its load as the figures were taken, for the table.
machine="$(nproc)-core $(uname -m), load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?) at the start ($(date -u +%Y-%m-%d))"
# -tags e2e: planagent's process-level benchmarks are in its e2e files.
run() { go test -tags e2e -run '^$' -count 1 "$@" 2>&1 | grep -E '^(Benchmark|FAIL|ok|---)' | tee -a "$out"; }
# BENCH_QUICK=1 (CI) leaves out the orchestration runs of 1 000 and 10 000
# tasks and the 10 000-task plan file, which
# take minutes each; everything else runs as in a full `make bench`.
quick=${BENCH_QUICK:-}

run -bench 'Pickup' -benchtime 300x ./codingagent/internal/watch/
run -bench 'Combine' ./codingagent/internal/layers/
run -bench 'ParseCommand|MarshalCommand' ./internal/protocol/
run -bench 'PromptCaching' -benchtime 3x ./internal/llmclient/
run -bench 'RequestAssembly' -benchtime 200x ./codingagent/internal/agent/
run -bench 'ScriptedSession' -benchtime 3x ./codingagent/internal/agent/
run -bench 'Chain100$|FanOut100$' -benchtime 3x ./planagent/internal/orchestrator/
# A task of three attempts side by side against one attempt, 2 s agents.
run -bench 'BestOfThree' -benchtime 5x ./planagent/internal/orchestrator/
[ -n "$quick" ] || run -bench 'Chain1000$|FanOut1000$|Chain10000$|FanOut10000$' -benchtime 1x -timeout 60m ./planagent/internal/orchestrator/
run -bench 'RunPlan' ./planagent/internal/taskgraph/
run -bench 'TaskSteps' -benchtime 100x -timeout 20m ./planagent/internal/checkpoint/
run -bench 'Attempt10k/pooled' -benchtime 10x -timeout 30m ./planagent/internal/checkpoint/
run -bench 'Attempt10k/fresh' -benchtime 3x -timeout 30m ./planagent/internal/checkpoint/
run -bench 'GoStdlib' -benchtime 3x ./internal/repomap/
run -bench 'StdlibRunPeakRSS' -benchtime 1x ./planagent/
run -bench 'RunPlanFile1000$' -benchtime 1x -timeout 10m ./planagent/
[ -n "$quick" ] || run -bench 'RunPlanFile10000$' -benchtime 1x -timeout 60m ./planagent/
# Tasks that write files and have acceptance: 100 in the quick run, 1 000 in full.
run -bench 'RunPlanFileWrites100$' -benchtime 1x -timeout 20m ./planagent/
[ -n "$quick" ] || run -bench 'RunPlanFileWrites1000$' -benchtime 1x -timeout 60m ./planagent/
# The same chain of 20 tasks on a git repository of the Go standard library.
[ -n "$quick" ] || run -bench 'RunPlanFileWritesStdlib20$' -benchtime 1x -timeout 20m ./planagent/
run -bench 'Stdio' -benchtime 200x ./internal/mcp/
run -bench 'GatewayOverhead' -benchtime 200x ./planagent/internal/gateway/
run -bench 'StreamUpdate' -benchtime 100x ./planagent/internal/webui/
if docker info >/dev/null 2>&1; then
  scripts/image.sh >/dev/null && scripts/test-images.sh >/dev/null
  CODEAGENT_E2E=1 run -bench 'AttemptStartToHeartbeat' -benchtime 1x ./planagent/internal/runtime/docker/
else
  echo "docker engine not reachable: BenchmarkAttemptStartToHeartbeat not run" | tee -a "$out"
fi
# Kubernetes (BenchmarkKubeJobToHeartbeat, BenchmarkKubeParallel4): a real
# single-node cluster that scripts/k8s-cluster.sh brings up here (root,
# kubectl, docker to import the image; the prebuilt archive in ../shared/k8s
# saves the cold build) and takes down at the end. Its ports and POD_SUBNET
# come from the environment (ETCD_PORT, APISERVER_PORT, ...: see the script)
# to run beside another cluster. When no cluster can be had the figures are
# NOT RUN, loudly, and the rest of make bench stands.
k8s_not_run() { echo "BENCH: NOT RUN: BenchmarkKubeJobToHeartbeat, BenchmarkKubeParallel4: $*" | tee -a "$out" >&2; }
k8s_image=${CODEAGENT_IMAGE:-codeagent/codingagent:latest}
if [ "$(id -u)" -ne 0 ] || ! command -v kubectl >/dev/null 2>&1; then
  k8s_not_run "they need root and kubectl (scripts/k8s-cluster.sh brings up the cluster)"
elif ! docker info >/dev/null 2>&1; then
  k8s_not_run "docker engine not reachable (the image $k8s_image is built with it and imported into the node)"
else
  k8s_dir=$(mktemp -d /tmp/codeagent-bench-k8s-XXXXXX)
  trap 'scripts/k8s-cluster.sh down "$k8s_dir/cluster" >/dev/null 2>&1 || true; rm -rf "$k8s_dir"' EXIT
  if IMAGE=$k8s_image scripts/image.sh >/dev/null &&
    scripts/k8s-cluster.sh up "$k8s_dir/cluster" "$k8s_image" >"$k8s_dir/up.log" 2>&1; then
    KUBE_E2E_KUBECONFIG=$k8s_dir/cluster/kubeconfig CODEAGENT_E2E=1 CODEAGENT_K8S=1 \
      run -bench 'Kube' -benchtime 1x -timeout 20m ./planagent/
  else
    k8s_not_run "the cluster did not come up: $(grep -m1 ERROR "$k8s_dir/up.log" || tail -n 1 "$k8s_dir/up.log")"
  fi
fi
# The figures table: each row whose benchmark ran above gets its figure
# from bench.out; the others keep theirs (BENCH_DOC= leaves it alone).
doc=${BENCH_DOC-docs/benchmarks.md}
if [ -n "$doc" ]; then
  go run ./internal/docgen/benchdoc "$doc" "$out" "$machine"
fi
