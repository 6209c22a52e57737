// Package layers combines the context the coding model works under from three
// layers:
//
//   - global: every *.md in the templates' global/ (standing instructions
//     baked into the image);
//   - project: the project's own AGENTS.md (or CLAUDE.md) at the root of
//     the workspace, when Options.Workspace is set, then
//     <runtime>/project/*.md as written by planagent, or the templates'
//     project/ when the runtime dir holds no enabled file;
//   - task: <runtime>/task/<task-id>/*.md, or the templates' task/ likewise.
//
// A file whose YAML front matter says `enabled: false` is skipped, so the
// shipped project and task templates, which only show the structure, stay
// out of the prompt. Front matter is never part of the output.
package layers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/docker/templates"
	"github.com/codeagent/codeagent/internal/projectdoc"
	"github.com/codeagent/codeagent/internal/protocol"
)

// Options says where the layers come from.
type Options struct {
	TaskID     string // validated with protocol.ValidateID when non-empty
	RuntimeDir string // the runtime context dir (volumes/context); empty = templates only
	Templates  fs.FS  // the template tree (global/, project/, task/); nil = Embedded()
	// Workspace is where the task works: its AGENTS.md (or CLAUDE.md)
	// opens the project layer. Empty: none is read.
	Workspace string
}

// Embedded returns the templates built into the binary.
func Embedded() fs.FS { return templates.FS() }

// The layers, in output order.
const (
	layerGlobal  = "global"
	layerProject = "project"
	layerTask    = "task"
)

// source is one directory a layer can come from.
type source struct {
	fsys  fs.FS
	dir   string // slash path inside fsys
	label string // "template" or "runtime", shown in the headings
	where string // how errors name the directory
}

// regularFS reads files of the volumes only when they are regular, in the
// open itself (no symbolic link followed, no wait on a FIFO): a check of
// the directory entry before a plain open leaves a moment in which the
// agent's shell could swap the file for a FIFO.
type regularFS struct {
	fs.FS
	root string
}

func (r regularFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return protocol.ReadRegular(filepath.Join(r.root, filepath.FromSlash(name)), 0)
}

// section is one file of the output.
type section struct {
	layer, name, label, body string
}

// Combine returns the combined context as markdown: each file under a
// heading naming its layer, file and source, e.g.
// "## [global] coding-standards.md (template)". Layers come in the order
// global, project, task and files within a layer by name, so the output
// depends only on the files. Missing directories give empty layers.
func Combine(opts Options) (string, error) {
	if opts.TaskID != "" {
		if err := protocol.ValidateID(opts.TaskID); err != nil {
			return "", fmt.Errorf("combine context: task %w", err)
		}
	}
	tmpl := opts.Templates
	if tmpl == nil {
		tmpl = Embedded()
	}
	template := func(layer string) source {
		return source{fsys: tmpl, dir: layer, label: "template", where: "templates " + layer + "/"}
	}
	runtime := func(dir string) *source {
		if opts.RuntimeDir == "" {
			return nil
		}
		return &source{fsys: regularFS{FS: os.DirFS(opts.RuntimeDir), root: opts.RuntimeDir}, dir: dir, label: "runtime",
			where: filepath.Join(opts.RuntimeDir, filepath.FromSlash(dir))}
	}

	var all []section
	global, err := readLayer(layerGlobal, template(layerGlobal))
	if err != nil {
		return "", err
	}
	all = append(all, global...)
	all = append(all, projectDoc(opts.Workspace)...)
	project, err := pickLayer(layerProject, runtime(layerProject), template(layerProject))
	if err != nil {
		return "", err
	}
	all = append(all, project...)
	var taskRuntime *source
	if opts.TaskID != "" {
		taskRuntime = runtime(path.Join(layerTask, opts.TaskID))
	}
	task, err := pickLayer(layerTask, taskRuntime, template(layerTask))
	if err != nil {
		return "", err
	}
	all = append(all, task...)
	return render(all), nil
}

// projectDoc is the workspace's AGENTS.md (or CLAUDE.md) as a section of
// the project layer. One that cannot be read (a FIFO, a link out of the
// workspace) does not stop the task: the section says why it is left out.
func projectDoc(workspace string) []section {
	doc, found, err := projectdoc.Read(workspace)
	if err != nil {
		return []section{{layer: layerProject, name: projectdoc.Names[0], label: "workspace",
			body: fmt.Sprintf("[the project's instructions are left out: %v]", err)}}
	}
	if !found {
		return nil
	}
	return []section{{layer: layerProject, name: doc.Name, label: "workspace", body: doc.Body()}}
}

// pickLayer uses the runtime directory when it has at least one enabled
// file, the templates otherwise.
func pickLayer(layer string, runtime *source, template source) ([]section, error) {
	if runtime != nil {
		s, err := readLayer(layer, *runtime)
		if err != nil || len(s) > 0 {
			return s, err
		}
	}
	return readLayer(layer, template)
}

// readLayer reads the enabled *.md files of one directory, sorted by name.
func readLayer(layer string, src source) ([]section, error) {
	entries, err := fs.ReadDir(src.fsys, src.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s context layer from %s: %w", layer, src.where, err)
	}
	var out []section
	for _, e := range entries { // fs.ReadDir sorts by name
		name := e.Name()
		// Temp names are files planagent is still writing.
		if e.IsDir() || protocol.IsTempName(name) || !strings.HasSuffix(name, ".md") {
			continue
		}
		// A FIFO would block the watcher for good and a symbolic link could
		// lead out of the volumes: only regular files are context.
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("context file %s in %s: %w (remove it)", name, src.where, protocol.ErrNotRegular)
		}
		data, err := fs.ReadFile(src.fsys, path.Join(src.dir, name))
		if err != nil {
			return nil, fmt.Errorf("read context file %s in %s: %w", name, src.where, err)
		}
		body, enabled, err := parseContextFile(data)
		if err != nil {
			return nil, fmt.Errorf("context file %s in %s: %w (fix or remove the front matter)", name, src.where, err)
		}
		if enabled {
			out = append(out, section{layer: layer, name: name, label: src.label, body: body})
		}
	}
	return out, nil
}

func render(sections []section) string {
	var b strings.Builder
	for i, s := range sections {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## [%s] %s (%s)\n\n", s.layer, s.name, s.label)
		if s.body != "" {
			b.WriteString(s.body)
			b.WriteString("\n")
		}
	}
	return b.String()
}
