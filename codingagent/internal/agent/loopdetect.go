package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
)

const (
	loopRepeats  = 3 // a call (or cycle of calls) seen this many times in a row is a loop
	loopMaxCycle = 3 // longest cycle of calls looked for
)

// loopDetector watches the sequence of tool calls of one run for a model
// stuck repeating itself: the same call three times in a row, or a short
// cycle (A B A B A B) repeated three times. A call is its name and its
// arguments as canonical JSON; results are not compared, so output that
// changes each time (a timestamp, a growing log) cannot hide a loop.
// (Crush's detector, internal/agent/loop_detection.go, differs: it hashes
// each step's calls together with their results and flags a signature seen
// more than 5 times among the last 10 steps, in any order.)
type loopDetector struct {
	seq []string
}

// add records one call and reports the loop it completes, if any.
func (d *loopDetector) add(name, args string) (string, bool) {
	d.seq = append(d.seq, name+" "+canonicalJSON(args))
	for cycle := 1; cycle <= loopMaxCycle; cycle++ {
		span := cycle * loopRepeats
		if len(d.seq) < span {
			break
		}
		tail := d.seq[len(d.seq)-span:]
		if repeats(tail, cycle) && (cycle == 1 || !allSame(tail[:cycle])) {
			first := tail[0]
			if len(first) > 120 {
				first = cutRunes(first, 120) + "…"
			}
			if cycle == 1 {
				return fmt.Sprintf("loop detected: the same tool call (%s) %d times in a row", first, loopRepeats), true
			}
			return fmt.Sprintf("loop detected: a cycle of %d tool calls repeated %d times (%s, ...)", cycle, loopRepeats, first), true
		}
	}
	return "", false
}

func repeats(tail []string, cycle int) bool {
	for i := cycle; i < len(tail); i++ {
		if tail[i] != tail[i-cycle] {
			return false
		}
	}
	return true
}

func allSame(s []string) bool {
	for _, v := range s[1:] {
		if v != s[0] {
			return false
		}
	}
	return true
}

// canonicalJSON re-encodes args so key order and spacing don't matter.
func canonicalJSON(args string) string {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return string(bytes.TrimSpace([]byte(args)))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return string(b)
}
