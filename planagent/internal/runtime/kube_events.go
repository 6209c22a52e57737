package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// eventsMirrorCap bounds what one attempt's live events copy writes on the
// host; the whole file still comes back with the results.
const eventsMirrorCap = 16 << 20

// mirrorEvents copies the task's events file, as codingagent writes it in
// the pod, onto the host's reports/ while the agent runs, so progress (the
// run's tool-call events, the web view) shows as with docker's bind mount.
// It follows the file over pods/exec (tail -f in the io container) until
// ctx ends; the host file is started afresh, so an adopted attempt's
// mirror does not repeat what a killed process copied.
func (k *Kube) mirrorEvents(ctx context.Context, pod, task, stem string) {
	host := k.opts.Volumes.EventsFile(stem)
	in := containerVolumes + "/reports/" + filepath.Base(k.opts.Volumes.EventsFile(task))
	script := fmt.Sprintf(`until [ -e %[1]s ]; do sleep 0.2; done; exec tail -c +1 -f %[1]s`, shellQuote(in))
	w := &cappedFile{path: host, limit: eventsMirrorCap}
	defer w.Close()
	err := k.exec.Exec(ctx, k.ns, pod, "io", []string{"/bin/sh", "-c", script}, nil, w)
	if err != nil && ctx.Err() == nil {
		k.log.Warn("follow the attempt's events", "pod", pod, "err", err)
	}
}

// cappedFile creates path on the first write and appends to it up to limit
// bytes, whole lines only (a reader takes a partial last line for one to
// come); the rest is dropped. Write never fails: the stream it drains
// must go on.
type cappedFile struct {
	mu      sync.Mutex
	path    string
	limit   int64
	f       *os.File
	written int64
	partial []byte
	failed  bool
}

func (c *cappedFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed || c.written >= c.limit {
		return len(p), nil
	}
	if c.f == nil {
		f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			c.failed = true
			return len(p), nil
		}
		c.f = f
	}
	c.partial = append(c.partial, p...)
	end := bytes.LastIndexByte(c.partial, '\n')
	if end < 0 {
		return len(p), nil
	}
	lines := c.partial[:end+1]
	if c.written+int64(len(lines)) > c.limit {
		c.written = c.limit // the next line would pass the cap: stop at a line's end
		c.partial = nil
		return len(p), nil
	}
	if _, err := c.f.Write(lines); err != nil {
		c.failed = true
	}
	c.written += int64(len(lines))
	c.partial = append(c.partial[:0], c.partial[end+1:]...)
	return len(p), nil
}

func (c *cappedFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	return c.f.Close()
}

var _ io.WriteCloser = (*cappedFile)(nil)
