package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// How files move without shared storage: planagent runs `tar` in the pod's
// io container over pods/exec (as kubectl cp does), stdin carrying a tar
// stream of the inputs in, stdout one of the results out. The io container
// has busybox (the AgentImage), so the user's image needs no tar.

// podExecer runs argv in a container of a pod with stdin and stdout streamed.
type podExecer interface {
	Exec(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout io.Writer) error
}

// spdyExec is pods/exec through the API server.
type spdyExec struct {
	cfg *rest.Config
	c   *kubeClient
}

func (e *spdyExec) Exec(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout io.Writer) error {
	u := e.c.execURL(ns, pod, &corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true})
	ex, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
	if err != nil {
		return fmt.Errorf("exec in pod %s: %w", pod, err)
	}
	var stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &stderr})
	if err != nil {
		return fmt.Errorf("exec %s in pod %s (RBAC needs create on pods/exec): %w: %s", argv[0], pod, err, strings.TrimSpace(tail(stderr.String(), 2000)))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// tarEntry is one host path put into the stream under name.
type tarEntry struct {
	host, name string
	optional   bool   // skipped when absent
	skip       string // a host directory under host left out (the volumes inside a workspace)
}

// writeTar streams the entries (directories recursively; symlinks as links,
// never followed) as a tar archive.
func writeTar(w io.Writer, entries []tarEntry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		fi, err := os.Lstat(e.host)
		if err != nil {
			if e.optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if !fi.IsDir() {
			if err := addTar(tw, e.host, e.name, fi); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(e.host, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.skip != "" && d.IsDir() && filepath.Clean(p) == filepath.Clean(e.skip) {
				return filepath.SkipDir
			}
			rel, err := filepath.Rel(e.host, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return addTar(tw, p, path.Join(e.name, filepath.ToSlash(rel)), info)
		})
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

func addTar(tw *tar.Writer, host, name string, fi fs.FileInfo) error {
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		l, err := os.Readlink(host)
		if err != nil {
			return err
		}
		link = l
	case fi.IsDir(), fi.Mode().IsRegular():
	default:
		return nil // sockets, devices, fifos stay behind
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	// Writable for the pod's uid whatever the host's modes.
	hdr.Mode |= 0o600
	if fi.IsDir() {
		hdr.Mode |= 0o700
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(host)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
	return err
}

// extractLimits bound what a pod can make planagent write.
const (
	extractMaxBytes   = 8 << 30
	extractMaxEntries = 1_000_000
)

// extractTar writes the entries of the stream whose names start with
// prefix + "/" (or equal a name in files) under root, a directory on the
// host. The stream comes from a pod planagent does not trust: every path is
// checked to stay local, and writes go through os.Root, which never
// follows a symlink out of root (a link written by the stream first
// cannot redirect a later file); hard links, devices and the like are
// dropped; modes lose setuid/setgid/sticky; sizes and counts are capped.
func extractTar(r io.Reader, root string, keep func(name string) (string, bool)) error {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer rt.Close()
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the results archive: %w", err)
		}
		if n > extractMaxEntries {
			return fmt.Errorf("the results archive has more than %d entries", extractMaxEntries)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dst, ok := keep(name)
		if !ok || dst == "" || dst == "." {
			continue
		}
		if !filepath.IsLocal(dst) {
			return fmt.Errorf("the results archive names %q, outside its directory", hdr.Name)
		}
		if parent := filepath.Dir(dst); parent != "." {
			if err := rt.MkdirAll(parent, 0o755); err != nil {
				return fmt.Errorf("extract %s: %w", hdr.Name, err)
			}
		}
		mode := fs.FileMode(hdr.Mode) & 0o777
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := rt.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("extract %s: %w", hdr.Name, err)
			}
		case tar.TypeReg:
			total += hdr.Size
			if total > extractMaxBytes {
				return fmt.Errorf("the results archive is larger than %d bytes", int64(extractMaxBytes))
			}
			_ = rt.Remove(dst)
			f, err := rt.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o600)
			if err != nil {
				return fmt.Errorf("extract %s: %w", hdr.Name, err)
			}
			_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("extract %s: %w", hdr.Name, err)
			}
		case tar.TypeSymlink:
			_ = rt.Remove(dst)
			if err := rt.Symlink(hdr.Linkname, dst); err != nil {
				return fmt.Errorf("extract %s: %w", hdr.Name, err)
			}
		}
	}
}

// replaceDir extracts the entries keep maps from r into a fresh directory
// beside dir and then swaps it in, so files the pod deleted are gone on
// the host too, as with a bind mount.
func replaceDir(r io.Reader, dir string, keep func(string) (string, bool)) error {
	fresh := dir + ".incoming"
	old := dir + ".old"
	_ = os.RemoveAll(fresh)
	_ = os.RemoveAll(old)
	if err := os.Mkdir(fresh, 0o755); err != nil {
		return err
	}
	if err := extractTar(r, fresh, keep); err != nil {
		_ = os.RemoveAll(fresh)
		return err
	}
	if err := os.Rename(dir, old); err != nil {
		_ = os.RemoveAll(fresh)
		return err
	}
	if err := os.Rename(fresh, dir); err != nil {
		_ = os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
}
