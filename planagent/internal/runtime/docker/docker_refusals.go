package docker

import (
	"context"
	"sync"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/refusals"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// composeRefusals follows, while a run reuses the compose watcher, the
// file where the compose gateway appends what its egress proxy refused
// (planagent gateway --refusals; volume.Layout.EgressRefusals), so that a
// refusal there reaches EgressRefused as one of planagent's own proxy
// does: an event of the run, in the task's result.
type composeRefusals struct {
	fo     *refusals.Follower
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// launched are the attempts this run gave the watcher: a client
	// naming any other is the run's refusal, so that what an agent puts in
	// its Proxy-Authorization neither lands on a task the run does not
	// have nor grows the run's record without bound.
	launched map[string]bool
}

// followRefusals begins following the compose gateway's refusals file from
// its current end; called by Start, under d.mu, when the watcher is reused.
func (d *Docker) followRefusals() {
	if d.refusals != nil || d.opts.EgressRefused == nil {
		return
	}
	c := &composeRefusals{launched: map[string]bool{}, done: make(chan struct{})}
	rel := relTo(d.opts.Volumes.Root, d.opts.Volumes.EgressRefusals())
	c.fo = refusals.Follow(d.opts.Volumes.Root, rel, d.log, func(r refusals.Record) {
		task, n, ok := attempt.ParseName(r.Client)
		if !ok || !c.isLaunched(r.Client) {
			task, n = "", 0
		}
		d.opts.EgressRefused(task, n, r.Refusal())
	})
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		t := time.NewTicker(eventsPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.fo.Poll()
			}
		}
	}()
	d.refusals = c
}

// composeLaunched notes an attempt the compose watcher carries out; the
// caller holds d.mu.
func (d *Docker) composeLaunched(a Attempt) {
	if c := d.refusals; c != nil {
		c.mu.Lock()
		c.launched[attempt.Name(a.TaskID, a.Attempt)] = true
		c.mu.Unlock()
	}
}

func (c *composeRefusals) isLaunched(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.launched[name]
}

// CatchUpRefusals reads, now, what the compose gateway's refusals file got
// since the last look. The gateway writes a refusal before it answers the
// agent, so once an attempt has reported, its refusals are in the file:
// the run reads them before it puts the attempt's result together.
func (d *Docker) CatchUpRefusals() {
	d.mu.Lock()
	c := d.refusals
	d.mu.Unlock()
	if c != nil {
		c.fo.Poll()
	}
}

// endRefusals reads the file a last time and stops following it.
func (d *Docker) endRefusals() {
	d.mu.Lock()
	c := d.refusals
	d.refusals = nil
	d.mu.Unlock()
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
	c.fo.Poll()
	c.fo.Close()
}
