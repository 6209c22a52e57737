package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
)

// max_file_size and max_files reach the checkpoints the run opens: a
// task's file above the configured size fails its squash, named.
func TestOpenCheckpointsTakesTheCopyLimits(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	c := exec.Command("sh", "-c", "git init -q -b main && echo x > notes.txt && git add -A && git -c user.name=u -c user.email=u@x commit -q -m init")
	c.Dir = ws
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	layout, err := volume.New(t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.MaxFileSize, cfg.MaxFiles = "1k", 50
	s := &session{cfg: cfg, layout: layout}
	ctx := t.Context()
	repo, err := s.openCheckpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	head, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	if err := repo.NewCopy(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = repo.Squash(ctx, dir, head, "a: data", "")
	var tl *checkpoint.FileTooLargeError
	if !errors.As(err, &tl) || tl.Max != 1024 || tl.Path != "data.bin" {
		t.Errorf("squash = %v, want a FileTooLargeError of data.bin above 1024 bytes", err)
	}
}
