// Package docker embeds the context templates baked into the image, so the binary has them as defaults.
//
// It lives here, beside the Dockerfile, because go:embed cannot reach parent
// directories; it is the only Go file under docker/.
package docker

import (
	"embed"
	"io/fs"
)

//go:embed context
var contextFS embed.FS

// ContextTemplates returns the template tree with global/, project/ and
// task/ at its root.
func ContextTemplates() fs.FS {
	// fs.Sub only fails for an invalid path; "context" is a valid constant.
	sub, _ := fs.Sub(contextFS, "context")
	return sub
}
