#!/usr/bin/env bash
# The benchmarks behind the README's figures, each with the iteration count
# its metric needs (percentiles want hundreds of samples; a 100-task run or a
# cold map of the Go standard library wants a few).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench.out}
: >"$out"
run() { go test -run '^$' -count 1 "$@" 2>&1 | grep -E '^(Benchmark|FAIL|ok|---)' | tee -a "$out"; }

run -bench 'Pickup' -benchtime 300x ./codingagent/internal/watch/
run -bench 'Combine' ./codingagent/internal/layers/
run -bench 'ParseCommand|MarshalCommand' ./internal/protocol/
run -bench 'RequestAssembly' -benchtime 200x ./codingagent/internal/agent/
run -bench 'Chain100' -benchtime 3x ./planagent/internal/orchestrator/
run -bench 'RunPlan' ./planagent/internal/taskgraph/
run -bench 'GoStdlib' -benchtime 3x ./internal/repomap/
if docker info >/dev/null 2>&1; then
  scripts/image.sh >/dev/null
  CODEAGENT_E2E=1 run -bench 'StartToHeartbeat' -benchtime 1x ./planagent/internal/runtime/
else
  echo "docker engine not reachable: BenchmarkStartToHeartbeat not run" | tee -a "$out"
fi
