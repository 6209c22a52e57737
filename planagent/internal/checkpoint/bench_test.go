package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// BenchmarkTaskSteps is one task of a chain as the orchestrator runs it,
// step by step, on a small repository (20 files): the attempt's copy (from
// the pool), one new file, the squash and the apply (onto the base it was
// copied from: a chain), the acceptance copy of the merged tree, the move
// of the workspace (the acceptance copy recycled meanwhile), the attempt's
// copy recycled. It reports each
// step's milliseconds per task; the README's "where the time goes" is
// from it.
func BenchmarkTaskSteps(b *testing.B) {
	ctx := b.Context()
	ws := b.TempDir()
	for i := range 20 {
		p := filepath.Join(ws, fmt.Sprintf("src/pkg%d/file%d.go", i%4, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg%d\n\nconst N%d = %d\n", i%4, i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c := exec.Command("sh", "-c", "git init -q -b main && git add -A && git -c user.name=u -c user.email=u@x commit -q -m init")
	c.Dir = ws
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	r, err := Open(ctx, ws, filepath.Join(b.TempDir(), "shadow.git"), nil)
	if err != nil {
		b.Fatal(err)
	}
	head, _ := r.Head(ctx)
	copies := b.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 2)
	if _, err := r.Prewarm(ctx, head); err != nil {
		b.Fatal(err)
	}
	var steps [5]time.Duration
	lap := func(i int, t0 time.Time) time.Time {
		now := time.Now()
		steps[i] += now.Sub(t0)
		return now
	}
	n := 0
	var recycled sync.WaitGroup
	defer recycled.Wait()
	for i := 0; b.Loop(); i++ {
		n++
		dir := filepath.Join(copies, fmt.Sprintf("t%d", i))
		t0 := time.Now()
		if err := r.NewCopy(ctx, dir, head); err != nil {
			b.Fatal(err)
		}
		t0 = lap(0, t0)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("w%05d.txt", i)), []byte("w\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		commit, _, err := r.Squash(ctx, dir, head, fmt.Sprintf("t%d: write", i), "")
		if err != nil {
			b.Fatal(err)
		}
		m, err := r.Apply(ctx, dir, head, commit, head)
		if err != nil {
			b.Fatal(err)
		}
		t0 = lap(1, t0)
		accept := dir + ".accept"
		if err := r.NewCopy(ctx, accept, m); err != nil {
			b.Fatal(err)
		}
		t0 = lap(2, t0)
		// As the orchestrator does: the acceptance copy is remade at the
		// merged state while the workspace moves, and the next copy
		// (waiting for it if need be) takes it as it is.
		recycled.Go(func() {
			if err := r.RecycleCopy(ctx, accept, m); err != nil {
				b.Error(err)
			}
		})
		if err := r.Advance(ctx, head, m); err != nil {
			b.Fatal(err)
		}
		head = m
		t0 = lap(3, t0)
		// The attempt's copy too, at the new state: the next acceptance
		// copy takes it and writes only the next task's change.
		recycled.Go(func() {
			if err := r.RecycleCopy(ctx, dir, m); err != nil {
				b.Error(err)
			}
		})
		lap(4, t0)
	}
	for i, name := range []string{"copy", "squash", "accept-copy", "move", "drop"} {
		b.ReportMetric(float64(steps[i].Microseconds())/1000/float64(n), name+"-ms")
	}
}

// BenchmarkEditTree1000 is a squash's tree work on a workspace whose files
// sit in one directory of a thousand: the root tree read, one file put in
// and the tree written. It grows with the directory, on every task.
func BenchmarkEditTree1000(b *testing.B) {
	ws := b.TempDir()
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("w%05d.txt", i)), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
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
	base, err := r.store.commitTree(head)
	if err != nil {
		b.Fatal(err)
	}
	blob := strings.Repeat("0", 39) + "1"
	objects := b.TempDir()
	for i := 0; b.Loop(); i++ {
		set := map[string]entry{fmt.Sprintf("new%05d.txt", i): {mode: "100644", blob: blob}}
		if _, err := r.store.editTree(objects, base, set, nil); err != nil {
			b.Fatal(err)
		}
	}
}
