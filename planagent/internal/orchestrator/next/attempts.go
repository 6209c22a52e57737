package next

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The attempt policies (config.AttemptEscalate, config.AttemptParallel;
// next does not import config).
const (
	PolicyEscalate = "escalate"
	PolicyParallel = "parallel"
)

// AttemptsToStart is how many of a task's bestOf attempts start now, with
// started of them started so far and firstFailed saying the first one's
// acceptance failed. parallel starts every attempt at once; escalate
// starts one, and the rest together only once it failed: a task that
// passes first time costs one attempt.
func AttemptsToStart(policy string, bestOf, started int, firstFailed bool) int {
	switch bestOf = max(bestOf, 1); {
	case started >= bestOf:
		return 0
	case policy == PolicyParallel:
		return bestOf - started
	case started == 0:
		return 1
	case firstFailed:
		return bestOf - started
	}
	return 0
}

// EscalationHint says whether attempt n (n ≥ 2) of a task with several
// attempts is told why the first one failed. Every other one is, from
// attempt 2: the hint steers an attempt onto the failure it names, which
// is what fixes a near miss, but it also anchors it on the first one's
// approach and diagnosis, which is what a wrong approach needs to lose.
// Half with, half without keeps both kinds of candidate in the field.
func EscalationHint(n int) bool { return n >= 2 && n%2 == 0 }

// Candidate is a finished attempt of a task as the ranking reads it.
type Candidate struct {
	Attempt int
	// Passed and Commands: acceptance commands that exited 0, of how many.
	// Only an attempt that passed all of them competes (Passing).
	Passed, Commands int
	// Judged: the judge command ran on the attempt's result; JudgeOK its
	// exit code was 0, Score the last number it printed (HasScore).
	Judged, JudgeOK, HasScore bool
	Score                     float64
	DiffLines                 int     // lines added plus removed by its squashed result
	CostUSD                   float64 // what its agent cost (0 unpriced)
	Tokens                    int     // its agent's tokens: the cost where there are no prices
	Finished                  time.Time
}

// Passing says every acceptance command of the attempt passed.
func (c Candidate) Passing() bool { return c.Passed == c.Commands }

// Rank orders the passing candidates best first, deterministically: more
// acceptance commands passed, then the judge (exit 0 before non-zero,
// then the higher score), then the smaller diff, the lower cost (tokens
// where both are unpriced), the earlier finish and, last, the lower
// attempt number, so two runs of the same results pick the same winner.
// The candidates that did not pass are left out.
func Rank(cs []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cs {
		if c.Passing() {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, compareCandidates)
	return out
}

func compareCandidates(a, b Candidate) int {
	if c := cmp.Compare(b.Passed, a.Passed); c != 0 {
		return c
	}
	if c := compareJudged(a, b); c != 0 {
		return c
	}
	if c := cmp.Compare(a.DiffLines, b.DiffLines); c != 0 {
		return c
	}
	if a.CostUSD > 0 || b.CostUSD > 0 {
		if c := cmp.Compare(a.CostUSD, b.CostUSD); c != 0 {
			return c
		}
	} else if c := cmp.Compare(a.Tokens, b.Tokens); c != 0 {
		return c
	}
	if c := a.Finished.Compare(b.Finished); c != 0 {
		return c
	}
	return cmp.Compare(a.Attempt, b.Attempt)
}

// Tied says a and b rank equal on everything the ranking weighs — the
// acceptance commands, the judge command, the diff's size and the cost —
// and only the finish time or the attempt number would order them: the
// ties an LLM review may break (`judge: llm`).
func Tied(a, b Candidate) bool {
	a.Finished, b.Finished, a.Attempt, b.Attempt = time.Time{}, time.Time{}, 0, 0
	return compareCandidates(a, b) == 0
}

// compareJudged: judged before not judged, exit 0 before non-zero, a
// score before none, the higher score first.
func compareJudged(a, b Candidate) int {
	if a.Judged != b.Judged {
		return boolFirst(a.Judged, b.Judged)
	}
	if !a.Judged {
		return 0
	}
	if a.JudgeOK != b.JudgeOK {
		return boolFirst(a.JudgeOK, b.JudgeOK)
	}
	if a.HasScore != b.HasScore {
		return boolFirst(a.HasScore, b.HasScore)
	}
	return cmp.Compare(b.Score, a.Score)
}

// boolFirst orders the true one first.
func boolFirst(a, b bool) int {
	if a && !b {
		return -1
	}
	if b && !a {
		return 1
	}
	return 0
}

// JudgeScore is the last number the judge command printed (a benchmark's
// ops/s, a count of tests passed): a larger number ranks higher. ok is
// false when it printed none.
func JudgeScore(output string) (score float64, ok bool) {
	fields := strings.FieldsFunc(output, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E')
	})
	for i := len(fields) - 1; i >= 0; i-- {
		f := strings.Trim(fields[i], ".")
		if f == "" || strings.Trim(f, "eE+-") == "" {
			continue
		}
		if x, err := strconv.ParseFloat(f, 64); err == nil {
			return x, true
		}
	}
	return 0, false
}
