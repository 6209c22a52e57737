// Package templates holds the context templates: the global, project and
// task layers of instructions the coding model works under (see
// codingagent's layers). The image copies this directory to
// /app/templates/context (docker/Dockerfile; .dockerignore leaves this Go
// file out), and the binary embeds it so that it has them as defaults too.
package templates

import (
	"embed"
	"io/fs"
)

//go:embed global project task
var files embed.FS

// FS returns the template tree with global/, project/ and task/ at its root.
func FS() fs.FS { return files }
