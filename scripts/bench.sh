#!/usr/bin/env bash
# The benchmarks behind the README's figures, each with the iteration count
# its metric needs (percentiles want hundreds of samples; a 100-task run or a
# cold map of the Go standard library wants a few).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench.out}
: >"$out"
run() { go test -run '^$' -count 1 "$@" 2>&1 | grep -E '^(Benchmark|FAIL|ok|---)' | tee -a "$out"; }
# BENCH_QUICK=1 (CI) leaves out the orchestration runs of 1 000 and 10 000
# tasks and the 10 000-task plan file, which
# take minutes each; everything else runs as in a full `make bench`.
quick=${BENCH_QUICK:-}

run -bench 'Pickup' -benchtime 300x ./codingagent/internal/watch/
run -bench 'Combine' ./codingagent/internal/layers/
run -bench 'ParseCommand|MarshalCommand' ./internal/protocol/
run -bench 'PromptCaching' -benchtime 3x ./internal/llm/
run -bench 'RequestAssembly' -benchtime 200x ./codingagent/internal/agent/
run -bench 'ScriptedSession' -benchtime 3x ./codingagent/internal/agent/
run -bench 'Chain100$|FanOut100$' -benchtime 3x ./planagent/internal/orchestrator/
[ -n "$quick" ] || run -bench 'Chain1000$|FanOut1000$|Chain10000$|FanOut10000$' -benchtime 1x -timeout 60m ./planagent/internal/orchestrator/
run -bench 'RunPlan' ./planagent/internal/taskgraph/
run -bench 'Attempt10k/pooled' -benchtime 10x -timeout 30m ./planagent/internal/checkpoint/
run -bench 'Attempt10k/fresh' -benchtime 3x -timeout 30m ./planagent/internal/checkpoint/
run -bench 'GoStdlib' -benchtime 3x ./internal/repomap/
run -bench 'StdlibRunPeakRSS' -benchtime 1x ./planagent/
run -bench 'RunPlanFile1000$' -benchtime 1x -timeout 10m ./planagent/
[ -n "$quick" ] || run -bench 'RunPlanFile10000$' -benchtime 1x -timeout 60m ./planagent/
# Tasks that write files and have acceptance: 100 in the quick run, 1 000 in full.
run -bench 'RunPlanFileWrites100$' -benchtime 1x -timeout 20m ./planagent/
[ -n "$quick" ] || run -bench 'RunPlanFileWrites1000$' -benchtime 1x -timeout 60m ./planagent/
run -bench 'Stdio' -benchtime 200x ./internal/mcp/
run -bench 'StreamUpdate' -benchtime 100x ./planagent/internal/webui/
if docker info >/dev/null 2>&1; then
  scripts/image.sh >/dev/null && scripts/test-images.sh >/dev/null
  CODEAGENT_E2E=1 run -bench 'AttemptStartToHeartbeat' -benchtime 1x ./planagent/internal/runtime/
else
  echo "docker engine not reachable: BenchmarkAttemptStartToHeartbeat not run" | tee -a "$out"
fi
