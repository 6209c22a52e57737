package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
)

// watchInterrupts answers Ctrl-C while a run is driven (answerInterrupts)
// until driven is called. Main's context ends at the first Ctrl-C; the
// signals are heard here too, from now on, so a quick second one is not lost.
func watchInterrupts(ctx context.Context, w io.Writer) (now <-chan struct{}, driven func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	stop, driving, answered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(answered)
		answerInterrupts(ctx, w, signals, driving, stop)
	}()
	return stop, func() {
		signal.Stop(signals)
		close(driving)
		<-answered
	}
}

// answerInterrupts answers Ctrl-C while a run is driven. The first ends
// ctx (Main's signal context): it is answered at once, since stopping
// takes seconds (the agents get their grace to report their tasks as
// interrupted), and says that a second Ctrl-C exists. The second closes
// now, which stops the agents at once. It returns when driving closes.
func answerInterrupts(ctx context.Context, w io.Writer, signals <-chan os.Signal, driving <-chan struct{}, now chan<- struct{}) {
	select {
	case <-ctx.Done():
		fmt.Fprintln(w, "stopping… the running tasks get a few seconds to report (Ctrl-C again to stop now)")
	case <-driving:
		return
	}
	for n := 0; n < 2; {
		select {
		case <-signals:
			n++ // the first is the one that ended ctx
		case <-driving:
			return
		}
	}
	fmt.Fprintln(w, "stopping now: the running agents are killed (resume starts their tasks again)")
	close(now)
}

// stopNowRuntime gives the runtime's Stop a context that now cancels. The
// orchestrator stops the runtime with a context that is never cancelled,
// so that the agents get their grace; a cancelled one is how a runtime is
// told to kill them at once.
type stopNowRuntime struct {
	orchestrator.Runtime
	now <-chan struct{}
}

func (r stopNowRuntime) Stop(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.now:
			cancel()
		case <-ctx.Done():
		}
	}()
	return r.Runtime.Stop(ctx)
}
