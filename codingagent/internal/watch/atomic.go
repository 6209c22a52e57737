package watch

import (
	"fmt"
	"os"
	"path/filepath"
)

// replaceFile writes data to path through a temp file and a rename, like
// protocol.WriteFileAtomic but without fsync. Readers never see a torn
// file; after a power loss the file may be old or missing, which is fine
// for what it is used for (owner files and heartbeats): both are rewritten
// or judged stale within seconds, while an fsync on the pick-up path costs
// milliseconds on every command.
func replaceFile(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := firstErr(werr, cerr, os.Chmod(tmp, 0o644)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
