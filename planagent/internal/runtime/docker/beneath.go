package docker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/codeagent/codeagent/planagent/internal/safefs"
)

var (
	// errTooLarge: a file an attempt wrote is larger than planagent takes.
	errTooLarge = errors.New("larger than the limit")
	// errLinked: a link stood where a directory of the path belongs.
	errLinked = errors.New("a link where a directory belongs")
)

// openBeneath opens the regular file rel under root, a tree a container
// wrote: no link is followed on the way, a FIFO is not waited on, anything
// but a regular file is refused (safefs). A file that is simply not there
// is fs.ErrNotExist as a *fs.PathError; a link where a directory belongs
// is an error that says so.
func openBeneath(root, rel string) (*os.File, error) {
	r, err := safefs.OpenRoot(root, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(rel)
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && !errors.As(err, &pe) {
		// safefs makes it "not exist"; here it is not a missing file.
		return nil, fmt.Errorf("%w: %s", errLinked, err.Error())
	}
	return f, err
}

// readBeneath reads the regular file rel under root (openBeneath), refusing
// one larger than limit without reading it.
func readBeneath(root, rel string, limit int64) ([]byte, error) {
	f, err := openBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes: %w of %d", rel, fi.Size(), errTooLarge, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w of %d", rel, errTooLarge, limit)
	}
	return data, nil
}
