package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/codeagent/codeagent/internal/catalog"
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
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.key, v, src)
	}
	readOnly := strings.Join(l.MCPReadOnly, ",")
	if readOnly == "" {
		readOnly = "(none)"
	}
	for _, kv := range [][2]string{{keyMCPServers, formatMCPServers(l.MCPServers)}, {keyMCPReadOnly, readOnly}, {keyPrices, formatPrices(l.Prices)}} {
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
	return nil
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

// AddFlags defines the flags for keys on fs, with the names, types and
// defaults Load expects, so commands cannot misspell them. Unknown keys are
// an error naming the key.
func AddFlags(fs *pflag.FlagSet, keys ...string) error {
	byKey := make(map[string]field)
	for _, f := range fields() {
		byKey[f.key] = f
	}
	d := Defaults()
	for _, key := range keys {
		f, ok := byKey[key]
		if !ok {
			return fmt.Errorf("config.AddFlags: unknown key %q (known: %s)", key, strings.Join(Keys(), ", "))
		}
		switch p := f.ptr(&d).(type) {
		case *string:
			def := *p
			if key == "api_key" {
				def = "" // never echo a key in --help
			}
			fs.String(f.flag, def, f.usage)
		case *int:
			fs.Int(f.flag, *p, f.usage)
		case *float64:
			fs.Float64(f.flag, *p, f.usage)
		case *time.Duration:
			fs.Duration(f.flag, *p, f.usage)
		}
	}
	return nil
}
