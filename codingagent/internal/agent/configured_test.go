package agent

import (
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/config"
)

// Every command builds its agent from the same settings.
func TestConfiguredCarriesEverySetting(t *testing.T) {
	c := config.Defaults()
	c.Model, c.SummaryModel = "big", "small"
	c.ContextWindow, c.ReservedOutput = 32000, 1000
	c.CompactionThreshold, c.KeepMessages, c.MaxIterations = 0.5, 3, 9
	c.RequestTimeout = time.Minute // the client's, not the agent's
	got := Configured(&c)
	want := Options{Model: "big", SummaryModel: "small", ContextWindow: 32000, ReservedOutput: 1000,
		Threshold: 0.5, KeepMessages: 3, MaxIterations: 9}
	if got.Model != want.Model || got.SummaryModel != want.SummaryModel || got.ContextWindow != want.ContextWindow ||
		got.ReservedOutput != want.ReservedOutput || got.Threshold != want.Threshold ||
		got.KeepMessages != want.KeepMessages || got.MaxIterations != want.MaxIterations {
		t.Errorf("Configured = %+v, want %+v", got, want)
	}
	if got.Client != nil || got.Tools != nil || got.Workspace != nil || got.SessionPath != "" {
		t.Errorf("Configured set what is the caller's: %+v", got)
	}
}
