package poll

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitSeesAConditionThatComesTrue(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if !Wait(t.Context(), time.Minute, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("Wait gave up on a condition that held on its third check")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("the condition was checked %d times, want 3 (it stops once it holds)", got)
	}
}

func TestWaitGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	start := time.Now()
	if Wait(t.Context(), 100*time.Millisecond, func() bool { n.Add(1); return false }) {
		t.Fatal("Wait reported a condition that never held")
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("Wait returned after %s, before its 100ms deadline", el)
	}
	if n.Load() < 2 {
		t.Errorf("the condition was checked %d times: not polled", n.Load())
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if Wait(ctx, time.Hour, func() bool { return false }) {
		t.Fatal("Wait reported a condition that never held")
	}
	if el := time.Since(start); el > time.Minute {
		t.Errorf("Wait took %s with a cancelled context", el)
	}
}
