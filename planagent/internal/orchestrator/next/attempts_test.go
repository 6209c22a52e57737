package next

import (
	"slices"
	"testing"
	"time"
)

func TestAttemptsToStart(t *testing.T) {
	for _, tt := range []struct {
		policy          string
		bestOf, started int
		firstFailed     bool
		want            int
		why             string
	}{
		{PolicyEscalate, 3, 0, false, 1, "escalate starts one"},
		{PolicyEscalate, 3, 1, false, 0, "and waits for its verdict"},
		{PolicyEscalate, 3, 1, true, 2, "then the other two together"},
		{PolicyEscalate, 3, 3, true, 0, "and no more"},
		{PolicyParallel, 3, 0, false, 3, "parallel starts all"},
		{PolicyParallel, 3, 1, false, 2, "a resume starts what was not started"},
		{PolicyParallel, 0, 0, false, 1, "no attempts set is one"},
		{PolicyEscalate, 1, 1, true, 0, "one attempt: retries are --max-retries's"},
	} {
		if got := AttemptsToStart(tt.policy, tt.bestOf, tt.started, tt.firstFailed); got != tt.want {
			t.Errorf("%s: AttemptsToStart(%s, %d, %d, %v) = %d, want %d", tt.why, tt.policy, tt.bestOf, tt.started, tt.firstFailed, got, tt.want)
		}
	}
}

func TestEscalationHint(t *testing.T) {
	var with []int
	for n := 1; n <= 5; n++ {
		if EscalationHint(n) {
			with = append(with, n)
		}
	}
	if !slices.Equal(with, []int{2, 4}) {
		t.Errorf("attempts told the first failure: %v, want [2 4] (every other one, from the second)", with)
	}
}

// The ranking of the example and of each tie-break in turn: the
// winner changes when (and only when) the criterion that decides changes.
func TestRank(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := func(n, passed, diff int) Candidate {
		return Candidate{Attempt: n, Passed: passed, Commands: 2, DiffLines: diff, Finished: t0.Add(time.Duration(n) * time.Second)}
	}
	order := func(cs []Candidate) []int {
		var out []int
		for _, c := range Rank(cs) {
			out = append(out, c.Attempt)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		cs   []Candidate
		want []int
	}{
		{"1 fails, 2 passes large, 3 passes small: 3 wins, 1 is out", []Candidate{c(1, 1, 5), c(2, 2, 400), c(3, 2, 12)}, []int{3, 2}},
		{"none passes: no winner", []Candidate{c(1, 0, 5), c(2, 1, 5)}, nil},
		{"the judge's exit 0 beats a smaller diff", func() []Candidate {
			a, b := c(1, 2, 5), c(2, 2, 50)
			a.Judged, b.Judged, b.JudgeOK = true, true, true
			return []Candidate{a, b}
		}(), []int{2, 1}},
		{"the judge's higher score beats a smaller diff", func() []Candidate {
			a, b := c(1, 2, 5), c(2, 2, 50)
			a.Judged, a.JudgeOK, a.HasScore, a.Score = true, true, true, 900
			b.Judged, b.JudgeOK, b.HasScore, b.Score = true, true, true, 1200
			return []Candidate{a, b}
		}(), []int{2, 1}},
		{"equal diffs: the cheaper wins", func() []Candidate {
			a, b := c(1, 2, 10), c(2, 2, 10)
			a.CostUSD, b.CostUSD = 0.30, 0.10
			return []Candidate{a, b}
		}(), []int{2, 1}},
		{"unpriced: fewer tokens win", func() []Candidate {
			a, b := c(1, 2, 10), c(2, 2, 10)
			a.Tokens, b.Tokens = 9000, 4000
			return []Candidate{a, b}
		}(), []int{2, 1}},
		{"all else equal: the earlier finish", func() []Candidate {
			a, b := c(1, 2, 10), c(2, 2, 10)
			a.Finished, b.Finished = t0.Add(time.Minute), t0
			return []Candidate{a, b}
		}(), []int{2, 1}},
		{"identical: the lower attempt number, whatever the input order", func() []Candidate {
			a, b := c(1, 2, 10), c(2, 2, 10)
			b.Finished = a.Finished
			return []Candidate{b, a}
		}(), []int{1, 2}},
	} {
		if got := order(tt.cs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: ranked %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestJudgeScore(t *testing.T) {
	for _, tt := range []struct {
		out  string
		want float64
		ok   bool
	}{
		{"BenchmarkParse-8   1000   1234.5 ns/op\nops/s: 81000\n", 81000, true},
		{"PASS\nok  \tpkg\t0.012s\n", 0.012, true},
		{"score=-3.5.", -3.5, true},
		{"all good\n", 0, false},
		{"", 0, false},
	} {
		got, ok := JudgeScore(tt.out)
		if got != tt.want || ok != tt.ok {
			t.Errorf("JudgeScore(%q) = %v, %v; want %v, %v", tt.out, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTied(t *testing.T) {
	now := time.Now()
	a := Candidate{Attempt: 1, Passed: 2, Commands: 2, DiffLines: 10, Tokens: 100, Finished: now}
	b := a
	b.Attempt, b.Finished = 2, now.Add(time.Minute)
	if !Tied(a, b) {
		t.Error("two attempts equal but for their finish and number are not tied")
	}
	for name, change := range map[string]func(*Candidate){
		"diff":   func(c *Candidate) { c.DiffLines++ },
		"tokens": func(c *Candidate) { c.Tokens++ },
		"cost":   func(c *Candidate) { c.CostUSD = 0.5 },
		"judge":  func(c *Candidate) { c.Judged, c.JudgeOK = true, true },
		"passed": func(c *Candidate) { c.Passed-- },
	} {
		c := b
		change(&c)
		if Tied(a, c) {
			t.Errorf("%s differs, yet tied", name)
		}
	}
}
