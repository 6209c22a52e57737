package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// AddFlags defines the flags of the settings keys on fs from the field
// table: each flag's name, type and help are the table's, so a setting's
// flag is written once. The help ends with the default and where else the
// setting is read, e.g. "(default 1; config parallel, env
// CODEAGENT_PARALLEL)". The flags themselves default to zero values: Load
// takes a flag only when it was given, below it the environment, the files
// and the defaults decide. Unknown keys are an error naming the key.
func AddFlags(fs *pflag.FlagSet, keys ...string) error {
	return addFlags(fs, "", keys)
}

// AddFlagsKept is AddFlags for a command where a flag not given keeps a
// value of its own rather than the configured one, as resume keeps the
// settings a run was started with: kept says which ("as the run was
// started"), and stands in the help for the default and the other sources.
func AddFlagsKept(fs *pflag.FlagSet, kept string, keys ...string) error {
	return addFlags(fs, kept, keys)
}

func addFlags(fs *pflag.FlagSet, kept string, keys []string) error {
	byKey := make(map[string]field)
	for _, f := range fields() {
		byKey[f.key] = f
	}
	var zero Config
	for _, key := range keys {
		f, ok := byKey[key]
		if !ok {
			return fmt.Errorf("config.AddFlags: unknown key %q (known: %s)", key, strings.Join(Keys(), ", "))
		}
		help := f.help(kept)
		switch f.ptr(&zero).(type) {
		case *string:
			fs.String(f.flag, "", help)
		case *int:
			fs.Int(f.flag, 0, help)
		case *bool:
			fs.Bool(f.flag, false, help)
		case *float64:
			fs.Float64(f.flag, 0, help)
		case *time.Duration:
			fs.Duration(f.flag, 0, help)
		case *[]string:
			fs.StringArray(f.flag, nil, help)
		}
	}
	return nil
}

// help is the help of f's flag: its usage, then its default (kept; the
// table's words, "default: the current context", or the value they explain,
// "default auto: anthropic for ..."; else the default value, none for an
// empty or zero one) and the config key and environment variable that set
// it too.
func (f field) help(kept string) string {
	if kept != "" {
		return f.usage + " (default: " + kept + ")"
	}
	d := Defaults()
	var def string
	switch v := f.format(&d); {
	case f.def != "" && v != "" && strings.HasPrefix(f.def, v):
		def = "default " + f.def + "; " // "default auto: ..."
	case f.def != "":
		def = "default: " + f.def + "; "
	case f.key == "api_key", v == "", v == "0", v == "0s":
		// no default worth saying (and never a key in --help)
	default:
		def = "default " + v + "; "
	}
	return fmt.Sprintf("%s (%sconfig %s, env %s)", f.usage, def, f.key, f.env)
}
