package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkAttempt10k is the per-attempt cost of isolation on a 10 000-file
// repository: copy the integration state, commit a one-file change, apply
// it onto the integration state, move the workspace, throw the copy away.
// pooled is the steady state, where an attempt takes the copy an earlier
// one threw away (only the files that differ are written); fresh is the
// first attempts of a run (one per parallel task, plus one for
// acceptance), which clone and check out the whole tree.
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
	for _, pooled := range []bool{true, false} {
		name := "fresh"
		if pooled {
			name = "pooled"
		}
		b.Run(name, func(b *testing.B) { benchAttempts(b, ws, pooled) })
	}
}

func benchAttempts(b *testing.B, ws string, pooled bool) {
	ctx := b.Context()
	r, err := Open(ctx, ws, filepath.Join(b.TempDir(), "shadow.git"), nil)
	if err != nil {
		b.Fatal(err)
	}
	head, _ := r.Head(ctx)
	start := head
	copies := b.TempDir()
	if pooled {
		r.SetPool(filepath.Join(copies, ".pool"), 4)
		// The first copy is a full clone; the figure is the steady state,
		// where attempts reuse the copies earlier ones left.
		warm := filepath.Join(copies, "warm")
		if err := r.NewCopy(ctx, warm, head); err != nil {
			b.Fatal(err)
		}
		if err := r.RemoveCopy(warm); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		// The workspace is shared by both sub-benchmarks: back to the start.
		if err := r.Advance(context.WithoutCancel(ctx), head, start); err != nil {
			b.Error(err)
		}
	})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(copies, fmt.Sprintf("t%d", i))
		if err := r.NewCopy(ctx, dir, head); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pkg%03d/new%d.go", i%100, i)), []byte("package p\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		c, _, err := r.Squash(ctx, dir, head, fmt.Sprintf("t%d: add a file", i), "")
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
