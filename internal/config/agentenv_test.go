package config

import (
	"testing"
	"time"
)

// What planagent hands its coding agent comes back from Load unchanged:
// one table writes and reads every setting.
func TestAgentEnvRoundTrips(t *testing.T) {
	want := Defaults()
	want.APIKey = "sk-test"
	want.BaseURL = "http://127.0.0.1:9/v1"
	want.Model = "m"
	want.SummaryModel = "small"
	want.ContextWindow = 32000
	want.ReservedOutput = 1000
	want.CompactionThreshold = 0.75
	want.KeepMessages = 4
	want.RequestTimeout = 90 * time.Second
	want.Retries = 2
	want.MaxIterations = 7
	want.ReasoningEffort = "low"
	want.RepoMapTokens = 0
	want.TaskTimeout = 90 * time.Minute
	want.Parallel = 3
	want.Runtime = "local" // not an agent setting: must not travel

	agentEnv := AgentEnv(&want)
	if _, ok := agentEnv["CODEAGENT_RUNTIME"]; ok {
		t.Error("AgentEnv carries runtime, which is planagent's own setting")
	}
	l, err := Load(Options{Getenv: env(agentEnv)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fields() {
		if !f.agent {
			continue
		}
		n++
		if got, w := f.format(&l.Config), f.format(&want); got != w {
			t.Errorf("%s: got %q back from %s=%q, want %q", f.key, got, f.env, agentEnv[f.env], w)
		}
		if src := l.Sources[f.key]; src != Source("env "+f.env) {
			t.Errorf("%s came from %s, want env %s", f.key, src, f.env)
		}
	}
	if n != len(agentEnv) {
		t.Errorf("AgentEnv has %d variables for %d agent settings", len(agentEnv), n)
	}
}
