package docker

import (
	"context"
	"errors"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
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
	return err == nil || cerrdefs.IsNotFound(err) || removalInProgress(err)
}

func removalInProgress(err error) bool {
	return (cerrdefs.IsConflict(err) || cerrdefs.IsInvalidArgument(err)) && strings.Contains(err.Error(), "already in progress")
}

// forceRemove removes the container and returns once it is gone: when
// another caller's removal is under way it waits for that one to finish,
// so that a run that ends (Stop) or starts (leftovers) leaves no container
// behind, not even one still "removing".
func (d *Docker) forceRemove(ctx context.Context, id string) error {
	_, err := d.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	if !removalInProgress(err) {
		if removed(err) {
			return nil
		}
		return err
	}
	wait := d.api.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionRemoved})
	select {
	case <-wait.Result:
		return nil
	case err := <-wait.Error:
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return errors.Join(errors.New("its removal, under way elsewhere, did not finish in time"), err)
		}
		return err
	}
}
