package runtime

import (
	"strings"

	cerrdefs "github.com/containerd/errdefs"
)

// removed reports whether the error of a forced ContainerRemove means the
// container is gone or going, which is all a caller removing it wants: no
// error, "no such container" (someone else removed it), or a removal
// already under way. The engine answers the last with 409 Conflict,
// "removal of container … is already in progress", while another caller
// removes the same container: the attempt's own clean-up when it exits,
// Stop, another run's leftover clean-up, `docker rm -f`. (API 1.24's
// documentation says 400 for it, so an invalid-argument error with that
// text counts too.)
func removed(err error) bool {
	if err == nil || cerrdefs.IsNotFound(err) {
		return true
	}
	return (cerrdefs.IsConflict(err) || cerrdefs.IsInvalidArgument(err)) && strings.Contains(err.Error(), "already in progress")
}
