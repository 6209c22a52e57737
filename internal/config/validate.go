package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/codeagent/codeagent/internal/llmconf"
)

// maxAttempts is planspec.MaxAttempts (config does not import the plans).
const maxAttempts = 8

// Efforts are the reasoning_effort values: the union of what OpenAI,
// xAI, DeepSeek and the others document; a chat profile may accept fewer.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// validate checks c and reports every bad value with where it came from;
// where(key) returns "codeagent.yaml:7", "env X", "flag --x", "default" or "".
func validate(c Config, where func(key string) string) error {
	shown := make(map[string]string)
	for _, f := range fields() {
		v := f.format(&c)
		if _, isString := f.ptr(&c).(*string); isString {
			v = strconv.Quote(v)
		}
		shown[f.key] = v
	}
	if u, err := url.Parse(c.BaseURL); err == nil && u.User != nil {
		shown["base_url"] = strconv.Quote(u.Redacted())
	}
	var errs []error
	check := func(key string, ok bool, want string) {
		if ok {
			return
		}
		errs = append(errs, &Error{Where: where(key), Key: key, Msg: fmt.Sprintf("%s is not allowed: want %s", shown[key], want)})
	}

	check("base_url", isHTTPURL(c.BaseURL), `an http(s) URL such as "https://api.openai.com/v1" or "http://localhost:11434/v1"`)
	check("model", strings.TrimSpace(c.Model) != "", "a model name (set OPENAI_MODEL or model in the file)")
	check("api", slices.Contains(llmconf.APIs, c.API), `one of "auto" (chosen from base_url and model), "chat", "anthropic", "responses"`)
	check("reasoning_effort", c.ReasoningEffort == "" || slices.Contains(Efforts, c.ReasoningEffort),
		`"" (the model's default) or one of "`+strings.Join(Efforts, `", "`)+`"`)
	check("thinking_budget", c.ThinkingBudget == 0 || (c.ThinkingBudget >= 1024 && c.ThinkingBudget < c.ReservedOutput),
		fmt.Sprintf("0 (from reasoning_effort) or at least 1024 tokens and below reserved_output (%d), which must hold the thinking and the answer", c.ReservedOutput))
	check("context_window", c.ContextWindow > 0, "a positive number of tokens")
	check("reserved_output", c.ReservedOutput > 0, "a positive number of tokens")
	check("compaction_threshold", c.CompactionThreshold > 0 && c.CompactionThreshold <= 1, "a fraction greater than 0 and at most 1, e.g. 0.9")
	check("keep_messages", c.KeepMessages > 0, "at least 1")
	check("request_timeout", c.RequestTimeout > 0, `a positive duration such as "90s" or "10m"`)
	check("retries", c.Retries >= 0, "0 or more")
	check("max_iterations", c.MaxIterations > 0, "at least 1")
	check("volumes_dir", c.VolumesDir != "", "a directory path")
	check("runtime", c.Runtime == "docker" || c.Runtime == "local" || c.Runtime == "kubernetes", `"docker", "local" or "kubernetes"`)
	check("image", c.Image != "", "an image reference such as codeagent/codingagent:latest")
	_, memErr := ParseMemory(c.ContainerMemory)
	check("container_memory", memErr == nil, `a positive size in docker units such as "512m" or "2g"`)
	check("container_cpus", c.ContainerCPUs > 0, "a positive number of CPUs, e.g. 1.5")
	check("container_pids", c.ContainerPids > 0, "at least 1")
	check("network", c.Network != "", `a docker network name such as "bridge"`)
	check("repo_map_tokens", c.RepoMapTokens >= 0, "0 (off) or more")
	check("task_timeout", c.TaskTimeout > 0, `a positive duration such as "30m"`)
	_, fileErr := ParseMemory(c.MaxFileSize)
	check("max_file_size", fileErr == nil, `a positive size in docker units such as "100m" or "1g"`)
	check("max_files", c.MaxFiles > 0, "at least 1")
	check("parallel", c.Parallel > 0, "at least 1")
	check("max_retries", c.MaxRetries >= 0, "0 or more")
	check("attempts", c.Attempts >= 1 && c.Attempts <= maxAttempts, fmt.Sprintf("1 to %d", maxAttempts))
	check("attempt_policy", c.AttemptPolicy == AttemptEscalate || c.AttemptPolicy == AttemptParallel, `"escalate" or "parallel"`)
	check("budget_tokens", c.BudgetTokens >= 0, "0 (no budget) or more tokens")
	check("budget_time", c.BudgetTime >= 0, `0 (no budget) or a duration such as "30m"`)
	check("budget_usd", c.BudgetUSD >= 0, "0 (no budget) or more USD, e.g. 2.50")
	check("task_budget_tokens", c.TaskBudgetTokens >= 0, "0 (no budget) or more tokens")
	_, selErr := ParseNodeSelector(c.KubeNodeSelector)
	check("kube_node_selector", selErr == nil, "key=value pairs separated by commas, e.g. disktype=ssd,zone=a")
	_, tolErr := ParseTolerations(c.KubeTolerations)
	check("kube_tolerations", tolErr == nil, "key[=value]:effect separated by commas, effect "+strings.Join(TaintEffects, ", ")+", e.g. gpu=true:NoSchedule")
	// The requests are the kubernetes runtime's: with docker or local, a
	// small container_memory must not be refused for a default request.
	kube := c.Runtime == "kubernetes"
	check("kube_cpu_request", c.KubeCPURequest > 0 && (!kube || c.KubeCPURequest <= c.ContainerCPUs), "a positive number of CPUs not above container_cpus, e.g. 0.5")
	memReq, memReqErr := ParseMemory(c.KubeMemoryRequest)
	memLimit, _ := ParseMemory(c.ContainerMemory)
	check("kube_memory_request", memReqErr == nil && (!kube || memErr != nil || memReq <= memLimit), `a positive size in docker units not above container_memory, e.g. "256m"`)
	check("kube_pending_timeout", c.KubePendingTimeout > 0, `a positive duration such as "3m"`)

	if c.ContextWindow > 0 && c.ReservedOutput > 0 && c.ReservedOutput >= c.ContextWindow {
		// Blame the value the user set; a default is not what they need to edit.
		key, other := "reserved_output", "context_window"
		if where(key) == "default" {
			key, other = other, key
		}
		relation := "less than"
		if key == "context_window" {
			relation = "more than"
		}
		otherAt := where(other)
		if otherAt == "" {
			otherAt = "set"
		}
		errs = append(errs, &Error{Where: where(key), Key: key, Msg: fmt.Sprintf(
			"%s is not allowed: want %s %s (%s, %s)", shown[key], relation, other, shown[other], otherAt)})
	}
	if _, _, err := llmconf.ResolveProfile(c.BaseURL, c.Compat, ""); err != nil {
		errs = append(errs, &Error{Where: where(keyCompat), Key: keyCompat, Msg: err.Error()})
	} else if slices.Contains(Efforts, c.ReasoningEffort) {
		if _, _, err := c.Profile(); err != nil {
			errs = append(errs, &Error{Where: where("reasoning_effort"), Key: "reasoning_effort", Msg: err.Error() +
				` (or keep it off this server's wire with compat: {reasoning_effort: ""})`})
		}
	}
	return errors.Join(errs...)
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// ParseMemory converts a docker-style size ("512m", "2g", "1.5GiB", "1048576")
// to bytes, with binary units as docker uses them.
func ParseMemory(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "b")
	t = strings.TrimSuffix(t, "i")
	mult := float64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("kmgtp", t[n-1]); i >= 0 {
			for range i + 1 {
				mult *= 1024
			}
			t = strings.TrimSpace(t[:n-1])
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || x <= 0 || x*mult > 1<<62 || strings.ContainsAny(t, "eEnN+-") {
		return 0, fmt.Errorf("memory size %q: want a positive size such as 512m or 2g", s)
	}
	b := int64(x * mult)
	if b < 1 {
		return 0, fmt.Errorf("memory size %q: rounds to zero bytes", s)
	}
	return b, nil
}

// MemoryBytes is ContainerMemory in bytes, for the container's memory limit.
func (c Config) MemoryBytes() (int64, error) { return ParseMemory(c.ContainerMemory) }

// MaxFileBytes is MaxFileSize in bytes, the largest file a task may commit.
func (c Config) MaxFileBytes() (int64, error) { return ParseMemory(c.MaxFileSize) }
