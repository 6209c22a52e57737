package watch

import "errors"

var (
	// ErrUnhealthy means no watcher has a fresh heartbeat on the volumes.
	ErrUnhealthy = errors.New("no live watcher")
	// ErrNoRunner means Options.Runner was not set.
	ErrNoRunner = errors.New("watch: Options.Runner is required")
)
