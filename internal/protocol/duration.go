package protocol

import (
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads and writes YAML as a Go duration
// string ("90s", "30m"). A whole number is read as seconds, because that is
// what people and models write when they think of a timeout.
type Duration time.Duration

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// FormatDuration is the one way a duration is shown to people, everywhere
// (progress lines, reports, summaries): milliseconds below a second
// ("51ms"), tenths of a second below a minute ("4.2s"), whole seconds above
// ("1m5s", "30m0s"). Exact figures go to JSON as milliseconds.
func FormatDuration(d time.Duration) string { return RoundDuration(d).String() }

// RoundDuration rounds d to the precision FormatDuration shows; a measured
// duration written to a file (a report's) is rounded so, the file then
// reads as the progress line and the summary do.
func RoundDuration(d time.Duration) time.Duration {
	switch a := d.Abs(); {
	case a < time.Second:
		return d.Round(time.Millisecond)
	case a < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}

// MarshalYAML writes the duration as a string; time.Duration.String output
// always parses back to the same value.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML accepts "1h30m"-style strings, whole seconds and null (zero).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("must be a duration like \"90s\" or \"30m\", not a %s", kindName(n))
	}
	switch n.Tag {
	case "!!null":
		*d = 0
		return nil
	case "!!int":
		var secs int64
		if err := n.Decode(&secs); err != nil || secs > math.MaxInt64/int64(time.Second) || secs < math.MinInt64/int64(time.Second) {
			return fmt.Errorf("%s seconds is out of range: use a duration like \"30m\"", n.Value)
		}
		*d = Duration(time.Duration(secs) * time.Second)
		return nil
	case "!!str":
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("%q is not a duration: use a number with a unit, like \"90s\", \"30m\" or \"1h30m\"", n.Value)
		}
		*d = Duration(v)
		return nil
	}
	return fmt.Errorf("%q is not a duration: use a number with a unit, like \"90s\", \"30m\" or \"1h30m\"", n.Value)
}
