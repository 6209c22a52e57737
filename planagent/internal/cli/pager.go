package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// showPatch writes a git patch. On a terminal it is coloured and goes
// through a pager as git's own diff does ($PAGER, else less with
// LESS=FRX, so a short patch is printed and the command ends); written to
// a pipe or a file it is exactly the patch, for `git apply`.
func showPatch(ctx context.Context, streams cmdutil.IOStreams, getenv func(string) string, patch string) error {
	if streams.OutIsTerminal == nil || !streams.OutIsTerminal() {
		_, err := io.WriteString(streams.Out, patch)
		return err
	}
	coloured := colourPatch(patch)
	pager := strings.TrimSpace(getenv("PAGER"))
	if pager == "" {
		if _, err := exec.LookPath("less"); err == nil {
			pager = "less"
		}
	}
	if pager == "" || pager == "cat" {
		_, err := io.WriteString(streams.Out, coloured)
		return err
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", pager)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(coloured), streams.Out, streams.Err
	cmd.Env = os.Environ()
	if getenv("LESS") == "" {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pager %q: %w (PAGER=cat prints without one)", pager, err)
	}
	return nil
}

// ANSI colours as git's diff uses them.
const (
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiReset = "\x1b[m"
)

// colourPatch colours a patch's lines: file headers bold, hunk headers
// cyan, removed lines red and added ones green.
func colourPatch(patch string) string {
	var b strings.Builder
	b.Grow(len(patch) + len(patch)/4)
	inHeader := false
	for line := range strings.SplitAfterSeq(patch, "\n") {
		text := strings.TrimSuffix(line, "\n")
		colour := ""
		switch {
		case strings.HasPrefix(text, "diff --git "):
			colour, inHeader = ansiBold, true
		case strings.HasPrefix(text, "@@"):
			colour, inHeader = ansiCyan, false
		case inHeader:
			colour = ansiBold // index, mode, ---/+++ lines
		case strings.HasPrefix(text, "+"):
			colour = ansiGreen
		case strings.HasPrefix(text, "-"):
			colour = ansiRed
		}
		if colour == "" || text == "" {
			b.WriteString(line)
			continue
		}
		b.WriteString(colour + text + ansiReset + line[len(text):])
	}
	return b.String()
}
