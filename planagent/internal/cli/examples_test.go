package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/cli"
)

// The shipped GitHub Actions workflow is valid YAML of the workflow shape,
// declares every input it uses, keeps the volumes out of the checkout,
// passes only flags planagent has, and keeps what the run did (job summary,
// a pushed branch, a patch artifact). The README shows the same file.
func TestGitHubActionsExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "github-actions.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Name string `yaml:"name"`
		On   struct {
			WorkflowDispatch struct {
				Inputs map[string]struct {
					Description string `yaml:"description"`
					Required    bool   `yaml:"required"`
					Default     string `yaml:"default"`
				} `yaml:"inputs"`
			} `yaml:"workflow_dispatch"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			RunsOn         string `yaml:"runs-on"`
			TimeoutMinutes int    `yaml:"timeout-minutes"`
			Steps          []struct {
				Name             string            `yaml:"name"`
				ID               string            `yaml:"id"`
				WorkingDirectory string            `yaml:"working-directory"`
				Uses             string            `yaml:"uses"`
				Run              string            `yaml:"run"`
				With             map[string]string `yaml:"with"`
				Env              map[string]string `yaml:"env"`
				If               string            `yaml:"if"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("examples/github-actions.yml: %v", err)
	}
	inputs := wf.On.WorkflowDispatch.Inputs
	for _, m := range regexp.MustCompile(`inputs\.([a-zA-Z0-9_-]+)`).FindAllStringSubmatch(string(raw), -1) {
		if _, ok := inputs[m[1]]; !ok {
			t.Errorf("inputs.%s is used but not declared under on.workflow_dispatch.inputs", m[1])
		}
	}
	if inputs["goal"].Description == "" || !inputs["goal"].Required {
		t.Errorf("the goal input is not declared as required with a description: %+v", inputs["goal"])
	}
	if wf.Permissions["contents"] != "write" || wf.Permissions["pull-requests"] != "write" {
		t.Error("pushing the branch and opening the pull request need permissions: contents: write, pull-requests: write")
	}
	job, ok := wf.Jobs["run"]
	if !ok || job.RunsOn == "" || len(job.Steps) == 0 {
		t.Fatalf("job run: %+v", job)
	}
	flagsOf := map[string]*cobra.Command{"run": cli.NewCmdRun(cmdutil.NewFactory(), nil), "publish": cli.NewCmdPublish(cmdutil.NewFactory(), nil)}
	root := cli.NewCmdRoot(cmdutil.NewFactory())
	var all strings.Builder
	for _, s := range job.Steps {
		if (s.Uses == "") == (s.Run == "") {
			t.Errorf("step %q needs exactly one of uses and run", s.Name)
		}
		// An expression pasted into a script is script injection (an input
		// "x$(curl …)" runs): only env: may carry ${{ }}, the script reads $VAR.
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q pastes a ${{ }} expression into its script: pass it through env:\n%s", s.Name, s.Run)
		}
		all.WriteString(s.Run + "\n")
		for _, v := range s.With {
			all.WriteString(v + "\n")
		}
		if !strings.Contains(s.Run, "bin/planagent") {
			continue
		}
		cmdline := strings.ReplaceAll(s.Run[strings.Index(s.Run, "bin/planagent"):], "\\\n", " ")
		cmdline = strings.SplitN(cmdline, ">", 2)[0]
		sub := strings.Fields(strings.TrimPrefix(cmdline, "bin/planagent\""))[0]
		cmd, known := flagsOf[sub]
		if !known {
			t.Errorf("planagent %s: not a command the test knows (%s)", sub, cmdline)
			continue
		}
		for _, f := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(cmdline, -1) {
			if cmd.Flags().Lookup(f[1]) == nil && root.PersistentFlags().Lookup(f[1]) == nil {
				t.Errorf("planagent %s has no flag --%s (%s)", sub, f[1], cmdline)
			}
		}
		if m := regexp.MustCompile(`--volumes "([^"]+)"`).FindStringSubmatch(cmdline); m == nil || !strings.HasPrefix(m[1], "$RUNNER_TEMP/") {
			t.Errorf("the volumes must live outside the checkout ($RUNNER_TEMP): %s", cmdline)
		}
	}
	steps := all.String()
	for _, want := range []string{`reports/summary.md" >> "$GITHUB_STEP_SUMMARY"`, "planagent\" publish", "--pr"} {
		if !strings.Contains(steps, want) {
			t.Errorf("no step does %q", want)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), string(raw)) {
		t.Error("docs/ci.md does not show examples/github-actions.yml as it is: copy it in")
	}
}
