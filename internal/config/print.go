package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/codeagent/codeagent/internal/catalog"
	"github.com/codeagent/codeagent/internal/llmconf"
)

// Print writes every key with its effective value and source as an aligned
// table. The API key is masked to its last four characters.
func (l *Loaded) Print(w io.Writer) error {
	file := l.File
	if file == "" {
		file = "(none)"
	}
	user := l.UserFile
	if user == "" {
		user = "(none)"
	}
	if _, err := fmt.Fprintf(w, "user config: %s\nconfig file: %s\n\n", user, file); err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, f := range fields() {
		v := f.format(&l.Config)
		switch {
		case f.key == "api_key":
			v = MaskKey(v)
		case v == "":
			v = `""`
		}
		src := l.Sources[f.key]
		if src == "" {
			src = SourceDefault
		}
		if f.key == "api" {
			v, src = l.apiShown(src)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.key, v, src)
	}
	readOnly := strings.Join(l.MCPReadOnly, ",")
	if readOnly == "" {
		readOnly = "(none)"
	}
	compat := FormatCompat(l.Compat)
	if compat == "" {
		compat = "(none)"
	}
	for _, kv := range [][2]string{{keyMCPServers, formatMCPServers(l.MCPServers)}, {keyMCPReadOnly, readOnly}, {keyPrices, formatPrices(l.Prices)}, {keyNotify, formatNotify(l.Notify)}, {keyCompat, compat}} {
		src := l.Sources[kv[0]]
		if src == "" {
			src = SourceDefault
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", kv[0], kv[1], src)
	}
	// What the catalog knows of the model, whether or not the config
	// overrides it: reasoning support and the maximum output are shown
	// only here.
	for _, m := range l.Catalog {
		reasoning := "no"
		if m.Reasoning {
			reasoning = "yes"
		}
		fmt.Fprintf(tw, "catalog\t%s: window %d, max output %d, reasoning %s\t%s (embedded)\n",
			m.Name(), m.ContextWindow, m.MaxOutput, reasoning, catalog.Version)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	return l.printProfile(w)
}

// printProfile shows the provider profile the LLM client will use: each
// field, its value, and whether it is the profile's or the compat key's.
func (l *Loaded) printProfile(w io.Writer) error {
	_, fields, err := l.Profile()
	if err != nil {
		return nil // Load rejects a bad compat map; a hand-built Config may hold one
	}
	if api, _, err := llmconf.ResolveAPI(l.API, l.BaseURL, l.Model); err == nil && api == llmconf.APIAnthropic {
		// Anthropic's Messages API has no Chat Completions fields to adapt:
		// a profile table there would describe requests never sent.
		_, err := fmt.Fprintf(w, "\nprovider profile: none (the anthropic api speaks Anthropic's Messages API; %s: applies to chat completions)\n", keyCompat)
		return err
	}
	compatSrc := l.Sources[keyCompat]
	if _, err := fmt.Fprintf(w, "\nprovider profile (chat completions; override with %s:):\n", keyCompat); err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPAT KEY\tVALUE\tSOURCE")
	for _, f := range fields {
		v, src := f.Value, f.Source
		if v == "" {
			v = `""`
		}
		if src == "compat" || strings.HasSuffix(src, "(compat profile)") {
			src = "compat, " + string(compatSrc)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Key, v, src)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	return nil
}

// apiShown is the api row: the dialect auto chose and why, so that a
// person sees what will be spoken without knowing the rule.
func (l *Loaded) apiShown(src Source) (string, Source) {
	api, why, err := llmconf.ResolveAPI(l.API, l.BaseURL, l.Model)
	if err != nil || l.API != llmconf.APIAuto {
		return l.API, src
	}
	return api, Source(fmt.Sprintf("%s (%s)", src, why))
}

// MaskKey shows only enough of an API key to tell keys apart: a well-known
// "sk-" prefix and the last four characters. Short keys are hidden entirely,
// since four characters of eight would give half of it away.
func MaskKey(key string) string {
	if key == "" {
		return "(not set)"
	}
	n := utf8.RuneCountInString(key)
	if n < 12 {
		return "(set, " + strconv.Itoa(n) + " chars, hidden)"
	}
	prefix := ""
	if strings.HasPrefix(key, "sk-") {
		prefix = "sk-"
	}
	r := []rune(key)
	return prefix + "…" + string(r[n-4:])
}
