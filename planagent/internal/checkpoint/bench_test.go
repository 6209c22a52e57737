package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkAttempt10k is the per-attempt cost of isolation on a 10 000-file
// repository: copy the integration state, commit a one-file change, apply
// it onto the integration state, move the workspace, throw the copy away
// (into the pool the next attempt takes it from).
func BenchmarkAttempt10k(b *testing.B) {
	ws := b.TempDir()
	for i := range 10000 {
		p := filepath.Join(ws, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package p\n\nconst C%d = %d\n", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c := exec.Command("sh", "-c", "git init -q -b main && git add -A && git -c user.name=u -c user.email=u@x commit -q -m init")
	c.Dir = ws
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	ctx := b.Context()
	r, err := Open(ctx, ws, filepath.Join(b.TempDir(), "shadow.git"), nil)
	if err != nil {
		b.Fatal(err)
	}
	head, _ := r.Head(ctx)
	copies := b.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 4)
	// The first copy is a full clone; the figure is the steady state, where
	// attempts reuse the copies earlier ones left.
	warm := filepath.Join(copies, "warm")
	if err := r.NewCopy(ctx, warm, head); err != nil {
		b.Fatal(err)
	}
	if err := r.RemoveCopy(warm); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(copies, fmt.Sprintf("t%d", i))
		if err := r.NewCopy(ctx, dir, head); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pkg%03d/new%d.go", i%100, i)), []byte("package p\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		c, err := r.Squash(ctx, dir, head, fmt.Sprintf("t%d: add a file", i), "")
		if err != nil {
			b.Fatal(err)
		}
		m, err := r.Apply(ctx, dir, head, c, head)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Advance(ctx, head, m); err != nil {
			b.Fatal(err)
		}
		head = m
		if err := r.RemoveCopy(dir); err != nil {
			b.Fatal(err)
		}
	}
}
