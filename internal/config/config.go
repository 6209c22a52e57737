// Package config loads the settings both programs share from flags,
// environment, a YAML file and defaults (in that order of precedence), and
// remembers where every value came from so errors and `config` output can say.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/catalog"
	"github.com/codeagent/codeagent/internal/llmconf"
)

// DefaultFile is read when no --config is given; its absence is not an error.
const DefaultFile = "codeagent.yaml"

// Source says where a value came from, e.g. "default",
// "file (/abs/codeagent.yaml:12)", "env OPENAI_MODEL", "flag --model".
type Source string

// SourceDefault marks a value nobody set.
const SourceDefault Source = "default"

// Config is the effective configuration. The zero value is not useful; use
// Load, or Defaults for tests.
type Config struct {
	APIKey  string
	BaseURL string
	Model   string
	// API is the wire dialect: auto, chat, anthropic or responses
	// (llmconf.ResolveAPI says what auto becomes, and why).
	API string
	// ReasoningEffort is how hard a reasoning model thinks: none, minimal,
	// low, medium, high, xhigh ("" the model's default); ThinkingBudget is
	// Anthropic's thinking budget in tokens (0: from ReasoningEffort).
	ReasoningEffort string
	ThinkingBudget  int
	// SummaryModel is a cheaper model for compaction summaries; "" means Model.
	SummaryModel        string
	ContextWindow       int     // tokens
	ReservedOutput      int     // tokens kept free for the answer
	CompactionThreshold float64 // fraction of the usable window, 0 < x <= 1
	KeepMessages        int     // messages kept verbatim at compaction
	RequestTimeout      time.Duration
	Retries             int // HTTP retries
	MaxIterations       int // tool-loop iterations per task
	VolumesDir          string
	WorkspaceDir        string // "" means <volumes>/workspace
	Runtime             string // "docker", "local" or "kubernetes"
	Image               string
	ContainerMemory     string // docker units: 512m, 2g
	ContainerCPUs       float64
	ContainerPids       int
	Network             string
	RepoMapTokens       int // 0 turns the repo map off
	TaskTimeout         time.Duration
	// IncludeIgnored are gitignore patterns of the workspace's ignored
	// files copied into every task copy (besides .worktreeinclude).
	IncludeIgnored []string
	// Egress is what the attempts may reach besides the model gateway
	// (host names, "*.domain", addresses; "open" alone: no limit);
	// EgressHosts maps names to addresses for the egress proxy
	// ("name=address").
	Egress      []string
	EgressHosts []string
	// SetupCommand runs in each fresh task copy before the agent and
	// before the acceptance commands.
	SetupCommand string
	// MaxFileSize (docker units: 100m, 1g) and MaxFiles bound what a
	// task's copy may commit: a file larger, or more files, fails the
	// attempt before git reads them.
	MaxFileSize string
	MaxFiles    int
	Parallel    int
	MaxRetries  int
	// Attempts is each task's number of independent attempts (best-of-N)
	// where the plan does not say; AttemptPolicy is how they run:
	// AttemptEscalate or AttemptParallel. FirstPassWins stops a task's
	// other attempts once one passed; Judge is a shell command that ranks
	// the passing attempts (its exit code, or the last number it prints).
	Attempts      int
	AttemptPolicy string
	FirstPassWins bool
	Judge         string
	// Budgets of a run (0: none): tokens of every model call, the run's
	// running time, and its cost in USD, which needs Prices for the model.
	BudgetTokens int
	BudgetTime   time.Duration
	BudgetUSD    float64
	// TaskBudgetTokens stops one task's agent past this many tokens (0: none).
	TaskBudgetTokens int
	// Kubernetes runtime: namespace ("" the context's), kubeconfig file
	// and context ("" kubectl's defaults, or in-cluster in a pod).
	KubeNamespace string
	Kubeconfig    string
	KubeContext   string
	// KubeSecret names an existing Secret the pods take the secret settings
	// from ("" one is created per run and deleted after it).
	KubeSecret string
	// KubeGateway is where the pods reach planagent's model gateway
	// (host or host:port of this host; "" or "pod": chosen by the runtime).
	KubeGateway string
	// Where and how big the attempts' pods are: node labels "k=v,...",
	// tolerations "k[=v]:Effect,..." (ParseNodeSelector, ParseTolerations)
	// and the agent container's requests (its limits are the container_*).
	KubeNodeSelector   string
	KubeTolerations    string
	KubeCPURequest     float64
	KubeMemoryRequest  string // docker units: 512m, 2g
	KubePendingTimeout time.Duration
	// Prices are USD per million tokens by model name.
	Prices map[string]Price
	// Notify says where to tell a person that a run needs them or ended
	// (nil: nowhere).
	Notify *Notify
	// MCPServers are the MCP servers whose tools the agent, the planner
	// and the chat are offered, by name.
	MCPServers map[string]MCPServer
	// MCPReadOnly names more MCP tools (mcp__<server>__<tool>, or a server
	// name for all its tools) that plan mode and the planner may use,
	// besides those the server marks readOnlyHint.
	MCPReadOnly []string
	// Compat overrides the LLM provider profile picked from BaseURL, by
	// compat key (llmconf.CompatKeys).
	Compat map[string]string
}

// Defaults returns the configuration used when nothing is set.
func Defaults() Config {
	return Config{
		BaseURL:             "https://api.openai.com/v1",
		API:                 llmconf.APIAuto,
		Model:               "gpt-4o-mini",
		ContextWindow:       128000,
		ReservedOutput:      8192,
		CompactionThreshold: 0.9,
		KeepMessages:        10,
		RequestTimeout:      10 * time.Minute,
		Retries:             llmconf.DefaultMaxRetries,
		MaxIterations:       100,
		VolumesDir:          "./volumes",
		Runtime:             "docker",
		Image:               "codeagent/codingagent:latest",
		ContainerMemory:     "2g",
		ContainerCPUs:       2,
		ContainerPids:       512,
		Network:             "bridge",
		RepoMapTokens:       1024,
		TaskTimeout:         30 * time.Minute,
		MaxFileSize:         "100m",
		MaxFiles:            100_000,
		KubeCPURequest:      0.1,
		KubeMemoryRequest:   "128m",
		KubePendingTimeout:  3 * time.Minute,
		Parallel:            1,
		MaxRetries:          1,
		Attempts:            1,
		AttemptPolicy:       AttemptEscalate,
	}
}

// The attempt policies (attempt_policy).
const (
	// AttemptEscalate runs one attempt and starts the others, together,
	// only when its acceptance fails: a task that passes first time costs
	// one attempt.
	AttemptEscalate = "escalate"
	// AttemptParallel runs every attempt at once.
	AttemptParallel = "parallel"
)

// Loaded is a Config together with the origin of each value.
type Loaded struct {
	Config
	// Sources maps every yaml key to where its value came from.
	Sources map[string]Source
	// File is the absolute path of the file that was read, "" when none was.
	File string
	// UserFile is the absolute path of the user-level file (UserFile) when
	// one was read: it sits under File (./codeagent.yaml or --config).
	UserFile string
	// Warnings are things worth telling the user that do not stop the run.
	Warnings []string
	// Catalog is what the model catalog said about the model (and the
	// summary model), the entries whose values fill what the config leaves
	// unset; empty when it knows neither.
	Catalog []catalog.Model
}

// Options says where Load looks.
type Options struct {
	// File is the --config value; "" means ./codeagent.yaml if it exists.
	File string
	// Flags are consulted for keys whose flag exists in the set and was changed.
	Flags *pflag.FlagSet
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// UserFile overrides the user-level file's path (tests); "" means
	// UserFile(Getenv).
	UserFile string
	// Catalog looks up what the config does not say about a model; nil
	// means the embedded catalog (catalog.Lookup).
	Catalog func(baseURL, model string) (catalog.Model, bool)
}

// UserFile is the user-level config file, read before (under) the
// project's: $XDG_CONFIG_HOME/codeagent/config.yaml, else
// $HOME/.config/codeagent/config.yaml; "" when neither variable is set.
func UserFile(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "codeagent", "config.yaml")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "codeagent", "config.yaml")
	}
	return ""
}

// Load merges defaults, the file, the environment and flags, then validates
// the result. A missing API key is not an error here: --help and `config`
// must work without one, and the LLM client reports it at first use.
func Load(opts Options) (*Loaded, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	st := &state{cfg: Defaults(), origins: make(map[string]origin)}

	user := opts.UserFile
	if user == "" {
		user = UserFile(getenv)
	}
	var userAbs string
	if user != "" {
		var err error
		if userAbs, err = st.readFile(user, false); err != nil {
			return nil, err
		}
	}
	file, err := st.readFile(opts.File, opts.File != "")
	if err != nil {
		return nil, err
	}
	st.applyEnv(getenv)
	st.applyMCPEnv(getenv)
	st.applyCompatEnv(getenv)
	st.applyFlags(opts.Flags)
	st.applyAnthropicKey(getenv)
	if len(st.errs) > 0 {
		return nil, errors.Join(st.errs...)
	}
	lookup := opts.Catalog
	if lookup == nil {
		lookup = catalog.Lookup
	}
	used := st.applyCatalog(lookup)
	if len(st.errs) > 0 {
		return nil, errors.Join(st.errs...)
	}
	if err := validate(st.cfg, st.where); err != nil {
		return nil, err
	}

	l := &Loaded{Config: st.cfg, Sources: make(map[string]Source), File: file, UserFile: userAbs, Warnings: st.warnings}
	for _, f := range fields() {
		l.Sources[f.key] = st.origins[f.key].source()
	}
	for _, key := range []string{keyMCPServers, keyMCPReadOnly, keyPrices, keyNotify, keyCompat} {
		l.Sources[key] = st.origins[key].source()
	}
	l.Catalog = used
	l.Sources[keyPrices] = pricesSource(st.origins[keyPrices], st.catalogPriced)
	return l, nil
}

// Keys returns every yaml key in display order.
func Keys() []string {
	fs := fields()
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return append(keys, keyMCPServers, keyMCPReadOnly, keyPrices, keyNotify, keyCompat)
}

// Validate checks a Config built by hand; Load already does this.
func (c Config) Validate() error {
	return validate(c, func(string) string { return "" })
}

// state accumulates values, their origins and all errors found, so one run
// reports every problem instead of the first.
type state struct {
	cfg      Config
	origins  map[string]origin
	errs     []error
	warnings []string
	// catalogPriced are the models whose price came from the catalog.
	catalogPriced []string
}

// readFile applies the YAML file and returns its absolute path, or "" when
// a file not named explicitly (the default, the user-level one) does not
// exist.
func (st *state) readFile(path string, explicit bool) (string, error) {
	if path == "" {
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		msg := "cannot read the config file"
		if errors.Is(err, fs.ErrNotExist) {
			msg = "config file not found: check the --config path"
		}
		return "", &Error{Where: path, Msg: msg, Err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("config file %s: resolve absolute path: %w", path, err)
	}
	st.applyFile(data, path, abs)
	if len(st.errs) > 0 {
		return "", errors.Join(st.errs...)
	}
	return abs, nil
}

func (st *state) applyEnv(getenv func(string) string) {
	for _, f := range fields() {
		raw := getenv(f.env)
		if raw == "" {
			continue // "VAR=" is how people unset a variable for one command
		}
		st.set(f, raw, origin{kind: fromEnv, name: f.env})
	}
	// These look plausible but are not read; say so rather than ignore them.
	for _, key := range []string{"api_key", "base_url", "model"} {
		wrong := "CODEAGENT_" + upper(key)
		if getenv(wrong) != "" {
			st.warnings = append(st.warnings, fmt.Sprintf("%s is ignored: use OPENAI_%s", wrong, upper(key)))
		}
	}
}

// applyAnthropicKey takes the key from ANTHROPIC_API_KEY when the api is
// anthropic, unless a flag named one: with both OPENAI_API_KEY and
// ANTHROPIC_API_KEY set, as on many machines, only the second can work.
func (st *state) applyAnthropicKey(getenv func(string) string) {
	api, _, err := llmconf.ResolveAPI(st.cfg.API, st.cfg.BaseURL, st.cfg.Model)
	if err != nil || api != llmconf.APIAnthropic || st.origins["api_key"].kind == fromFlag {
		return
	}
	if key := getenv(AnthropicKeyEnv); key != "" {
		st.cfg.APIKey = key
		st.origins["api_key"] = origin{kind: fromEnv, name: AnthropicKeyEnv}
	}
}

func (st *state) applyFlags(flags *pflag.FlagSet) {
	if flags == nil {
		return
	}
	for _, f := range fields() {
		fl := flags.Lookup(f.flag)
		if fl == nil || !fl.Changed {
			continue
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			items := sv.GetSlice()
			if p, isList := f.ptr(&st.cfg).(*[]string); isList && f.adds {
				items = append(append([]string(nil), *p...), items...)
			}
			st.setList(f, items, origin{kind: fromFlag, name: "--" + f.flag})
			continue
		}
		st.set(f, fl.Value.String(), origin{kind: fromFlag, name: "--" + f.flag})
	}
}

// setList sets a list field from items given one by one (a YAML list, a
// repeated flag), so an item may hold a comma.
func (st *state) setList(f field, items []string, o origin) {
	if p, ok := f.ptr(&st.cfg).(*[]string); ok {
		*p = nil
		for _, it := range items {
			if it = strings.TrimSpace(it); it != "" {
				*p = append(*p, it)
			}
		}
		st.origins[f.key] = o
	}
}

func (st *state) set(f field, raw string, o origin) {
	if err := f.parse(&st.cfg, raw); err != nil {
		st.errs = append(st.errs, &Error{Where: o.where(), Key: f.key, Msg: err.Error()})
		return
	}
	st.origins[f.key] = o
}

// where locates key's value for error messages.
func (st *state) where(key string) string {
	return st.origins[key].where()
}
