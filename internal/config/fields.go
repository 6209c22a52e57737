package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// field ties a yaml key to its flag, env var and Config field. One table
// drives parsing, flags, validation messages and Print, so they cannot drift.
type field struct {
	key  string
	flag string // without "--"; "" means key with '_' → '-'
	env  string // "" means CODEAGENT_<KEY>
	ptr  func(*Config) any
	// usage is the help of the setting's flag (AddFlags adds its default
	// and where else it is read).
	usage string
	// def says the default in the flag's help where the value alone would
	// not ("the current context"); "" shows the default value, if any.
	def string
	// adds marks a list whose flag adds to the file's list instead of
	// replacing it (--egress host opens one more host).
	adds bool
	// agent marks the settings a coding agent started by planagent needs:
	// AgentEnv hands them over in its environment.
	agent bool
}

// fields returns the table in display order. It is a function, not a
// package variable, so nothing mutable is shared between Loads.
func fields() []field {
	fs := []field{
		{key: "api_key", env: APIKeyEnv, ptr: func(c *Config) any { return &c.APIKey },
			usage: "API key of the OpenAI-compatible server", agent: true},
		{key: "base_url", env: "OPENAI_BASE_URL", ptr: func(c *Config) any { return &c.BaseURL },
			usage: "OpenAI-compatible base URL, including /v1 where the server needs it, e.g. http://localhost:11434/v1", agent: true},
		{key: "model", env: "OPENAI_MODEL", ptr: func(c *Config) any { return &c.Model },
			usage: "model name", agent: true},
		{key: "api", ptr: func(c *Config) any { return &c.API },
			usage: "wire API: auto, chat, anthropic or responses",
			def:   "auto: anthropic for api.anthropic.com, responses for OpenAI's *-codex models, else chat", agent: true},
		{key: "reasoning_effort", ptr: func(c *Config) any { return &c.ReasoningEffort },
			usage: "how hard a reasoning model thinks: none, minimal, low, medium, high or xhigh",
			def:   "the model's", agent: true},
		{key: "thinking_budget", ptr: func(c *Config) any { return &c.ThinkingBudget },
			usage: "Anthropic extended thinking budget in tokens, at least 1024 and below reserved_output",
			def:   "0: from --reasoning-effort, else off", agent: true},
		{key: "summary_model", ptr: func(c *Config) any { return &c.SummaryModel },
			usage: "cheaper model for compaction summaries (empty: same as model)", agent: true},
		{key: "context_window", ptr: func(c *Config) any { return &c.ContextWindow },
			usage: "model context window in tokens", agent: true},
		{key: "reserved_output", ptr: func(c *Config) any { return &c.ReservedOutput },
			usage: "tokens kept free for the model's answer", agent: true},
		{key: "compaction_threshold", ptr: func(c *Config) any { return &c.CompactionThreshold },
			usage: "compact history when this fraction of the usable window is full (0 < x <= 1)", agent: true},
		{key: "keep_messages", ptr: func(c *Config) any { return &c.KeepMessages },
			usage: "recent messages kept verbatim at compaction", agent: true},
		{key: "request_timeout", ptr: func(c *Config) any { return &c.RequestTimeout },
			usage: "timeout of one LLM request, e.g. 90s", agent: true},
		{key: "retries", ptr: func(c *Config) any { return &c.Retries },
			usage: "retries of a failed LLM request", agent: true},
		{key: "max_iterations", ptr: func(c *Config) any { return &c.MaxIterations },
			usage: "tool-loop iterations per task", agent: true},
		{key: "volumes_dir", flag: "volumes", ptr: func(c *Config) any { return &c.VolumesDir },
			usage: "volumes dir holding context/, commands/, reports/, workspace/"},
		{key: "workspace_dir", flag: "workspace", ptr: func(c *Config) any { return &c.WorkspaceDir },
			usage: "workspace dir",
			def:   "<volumes>/workspace"},
		{key: "runtime", ptr: func(c *Config) any { return &c.Runtime },
			usage: "where the coding agent runs: docker, local or kubernetes"},
		{key: "image", ptr: func(c *Config) any { return &c.Image },
			usage: "image of the task containers: any local image with /bin/sh; planagent brings codingagent"},
		{key: "container_memory", ptr: func(c *Config) any { return &c.ContainerMemory },
			usage: "memory limit of the agent container, e.g. 512m, 2g"},
		{key: "container_cpus", ptr: func(c *Config) any { return &c.ContainerCPUs },
			usage: "CPU limit of the agent container"},
		{key: "container_pids", ptr: func(c *Config) any { return &c.ContainerPids },
			usage: "process limit of the agent container"},
		{key: "network", ptr: func(c *Config) any { return &c.Network },
			usage: "docker network of the agent container (with egress open)"},
		{key: "egress", ptr: func(c *Config) any { return &c.Egress },
			usage: "what the attempts may reach besides the model gateway, through planagent's egress proxy: a host name, *.domain, an address or prefix, each with an optional :port; repeatable, adds to the config's list; \"open\" alone: the runtime's open network",
			def:   "none", adds: true},
		{key: "egress_hosts", ptr: func(c *Config) any { return &c.EgressHosts },
			usage: "name=address the egress proxy dials for a name instead of asking DNS (a mirror on the LAN); the address counts as named"},
		{key: "kube_namespace", flag: "namespace", ptr: func(c *Config) any { return &c.KubeNamespace },
			usage: "kubernetes runtime: namespace of the attempts' Jobs",
			def:   "the context's namespace"},
		{key: "kubeconfig", ptr: func(c *Config) any { return &c.Kubeconfig },
			usage: "kubernetes runtime: kubeconfig file",
			def:   "$KUBECONFIG or ~/.kube/config; in a pod the in-cluster config"},
		{key: "kube_context", flag: "context", ptr: func(c *Config) any { return &c.KubeContext },
			usage: "kubernetes runtime: kubeconfig context",
			def:   "the current context"},
		{key: "kube_secret", ptr: func(c *Config) any { return &c.KubeSecret },
			usage: "kubernetes runtime: existing Secret holding OPENAI_API_KEY and the MCP servers' ${VAR}s by name",
			def:   "one created per run"},
		{key: "kube_gateway", ptr: func(c *Config) any { return &c.KubeGateway },
			usage: "kubernetes runtime: address (host or host:port) of this host where the pods reach planagent's model gateway, which alone holds the key; pod: planagent's pod IP",
			def:   "in a pod: its IP; else this host's address toward the pods (the route to the image check's pod), else toward the API server"},
		{key: "kube_node_selector", ptr: func(c *Config) any { return &c.KubeNodeSelector },
			usage: "kubernetes runtime: node selector of the attempts' pods, key=value,... (empty: any node)"},
		{key: "kube_tolerations", ptr: func(c *Config) any { return &c.KubeTolerations },
			usage: "kubernetes runtime: taints the attempts' pods tolerate, key[=value]:effect,... (empty: none)"},
		{key: "kube_cpu_request", ptr: func(c *Config) any { return &c.KubeCPURequest },
			usage: "kubernetes runtime: CPUs requested for the agent container (its limit is container_cpus)"},
		{key: "kube_memory_request", ptr: func(c *Config) any { return &c.KubeMemoryRequest },
			usage: "kubernetes runtime: memory requested for the agent container, e.g. 256m (its limit is container_memory)"},
		{key: "kube_pending_timeout", ptr: func(c *Config) any { return &c.KubePendingTimeout },
			usage: "kubernetes runtime: how long a pod may stay unscheduled or not started before its attempt fails"},
		{key: "repo_map_tokens", ptr: func(c *Config) any { return &c.RepoMapTokens },
			usage: "token budget of the repo map (0: off)", agent: true},
		{key: "task_timeout", ptr: func(c *Config) any { return &c.TaskTimeout },
			usage: "time limit of one task, e.g. 30m", agent: true},
		{key: "include_ignored", ptr: func(c *Config) any { return &c.IncludeIgnored },
			usage: "an ignored path (gitignore pattern) of the workspace to copy into every task's copy, besides .worktreeinclude; repeatable"},
		{key: "setup_command", ptr: func(c *Config) any { return &c.SetupCommand },
			usage: "shell command run in each fresh task copy before the agent starts and before the acceptance commands, e.g. \"npm ci\""},
		{key: "max_file_size", ptr: func(c *Config) any { return &c.MaxFileSize },
			usage: "largest file a task may commit (its size on disk as it claims it, holes of a sparse file included), e.g. 100m, 1g: a larger one fails the attempt before git reads it"},
		{key: "max_files", ptr: func(c *Config) any { return &c.MaxFiles },
			usage: "most files a task's copy may hold (tracked, or untracked and not ignored): more fail the attempt before git reads them"},
		{key: "parallel", ptr: func(c *Config) any { return &c.Parallel },
			usage: "dispatch up to N ready tasks at once", agent: true},
		{key: "max_retries", ptr: func(c *Config) any { return &c.MaxRetries },
			usage: "retries of a failed task"},
		{key: "attempts", ptr: func(c *Config) any { return &c.Attempts },
			usage: "independent attempts per task where the plan does not say (1-8): the best one whose acceptance commands pass is merged"},
		{key: "attempt_policy", ptr: func(c *Config) any { return &c.AttemptPolicy },
			usage: "how a task's attempts run: escalate (one, the others only when its acceptance fails) or parallel (all at once)"},
		{key: "first_pass_wins", ptr: func(c *Config) any { return &c.FirstPassWins },
			usage: "stop a task's other attempts as soon as one passes its acceptance commands"},
		{key: "judge", ptr: func(c *Config) any { return &c.Judge },
			usage: "shell command that ranks a task's passing attempts, run in each one's result: exit 0 before non-zero, then the larger last number it prints",
			def:   "none"},
		{key: "budget_tokens", ptr: func(c *Config) any { return &c.BudgetTokens },
			usage: "pause the run once its tokens (agents, planner, decisions) reach N: no new task starts; exit 3",
			def:   "none"},
		{key: "budget_time", ptr: func(c *Config) any { return &c.BudgetTime },
			usage: "pause the run once it has run this long, e.g. 30m; exit 3",
			def:   "none"},
		{key: "budget_usd", ptr: func(c *Config) any { return &c.BudgetUSD },
			usage: "pause the run once its cost reaches X USD; needs prices for the model in the config; exit 3",
			def:   "none"},
		{key: "task_budget_tokens", ptr: func(c *Config) any { return &c.TaskBudgetTokens },
			usage: "fail a task (reason budget) once its agent's tokens pass N (0: no budget)"},
	}
	for i := range fs {
		if fs[i].flag == "" {
			fs[i].flag = strings.ReplaceAll(fs[i].key, "_", "-")
		}
		if fs[i].env == "" {
			fs[i].env = "CODEAGENT_" + upper(fs[i].key)
		}
	}
	return fs
}

func upper(key string) string { return strings.ToUpper(key) }

// EnvWorkspaceExclude lists workspace-relative dirs (comma-separated) that
// are not part of the workspace: planagent sets it for its coding agent when
// its volumes dir lies inside the workspace, which a container cannot tell
// from its own mounts.
const EnvWorkspaceExclude = "CODEAGENT_WORKSPACE_EXCLUDE"

// AgentEnv is the environment that hands c's agent settings (the fields
// marked agent) to a coding agent planagent starts, by env var name. Load
// reading it back gives the same values, since one table writes and reads
// them. It holds the API key: it is for a process environment, never a file.
func AgentEnv(c *Config) map[string]string {
	env := map[string]string{}
	for _, f := range fields() {
		if f.agent {
			env[f.env] = f.format(c)
		}
	}
	if len(c.Compat) > 0 {
		env[EnvCompat] = FormatCompat(c.Compat)
	}
	return env
}

// parse sets f's Config field from text as it appears in env, flags or YAML.
// The error says what was wanted so the caller only adds where and which key.
func (f field) parse(c *Config, raw string) error {
	switch p := f.ptr(c).(type) {
	case *string:
		*p = raw
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("want an integer, got %q", raw)
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", raw)
		}
		*p = b
	case *float64:
		x, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("want a number, got %q", raw)
		}
		*p = x
	case *[]string:
		*p = splitList(raw)
	case *time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("want a duration such as \"90s\", \"10m\" or \"1h30m\", got %q", raw)
		}
		*p = d
	default:
		return fmt.Errorf("internal: key %s has unsupported type %T", f.key, p)
	}
	return nil
}

// format renders f's value the way a user would write it in the file.
func (f field) format(c *Config) string {
	switch p := f.ptr(c).(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *bool:
		return strconv.FormatBool(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *time.Duration:
		return formatDuration(*p)
	case *[]string:
		return strings.Join(*p, ",")
	}
	return fmt.Sprint(f.ptr(c))
}

// splitList reads a list given as one string (env, flag): comma-separated
// items, blanks dropped.
func splitList(raw string) []string {
	var out []string
	for _, item := range strings.Split(raw, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// formatDuration drops Go's trailing zero units: "10m" rather than "10m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
