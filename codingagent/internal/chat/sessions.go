package chat

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/session"
	"github.com/codeagent/codeagent/internal/llm"
)

// ErrNoSession is a --continue or --resume that finds nothing to resume.
var ErrNoSession = errors.New("no such chat session")

const sessionPrefix = "chat-"

// SessionPath is the conversation log of chat session id.
func SessionPath(dir, id string) string { return filepath.Join(dir, sessionPrefix+id+".jsonl") }

// statePath holds the session's plan and todos beside its log.
func statePath(dir, id string) string { return filepath.Join(dir, sessionPrefix+id+".state.json") }

// NewSessionID is a sortable id: the time, plus a random suffix so two
// chats started in the same second do not share a log.
func NewSessionID(now time.Time) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// SessionInfo describes one saved chat session.
type SessionInfo struct {
	ID         string
	Modified   time.Time
	Messages   int
	FirstInput string // the first user message, shortened
}

// ListSessions returns the chat sessions in dir, the most recently used first.
func ListSessions(dir string) ([]SessionInfo, error) {
	paths, err := filepath.Glob(filepath.Join(dir, sessionPrefix+"*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("list chat sessions in %s: %w", dir, err)
	}
	var out []SessionInfo
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue // removed meanwhile
		}
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), sessionPrefix), ".jsonl")
		info := SessionInfo{ID: id, Modified: fi.ModTime()}
		if recs, err := session.Read(p); err == nil {
			for _, r := range recs {
				if r.Kind != session.KindMessage || r.Message == nil {
					continue
				}
				info.Messages++
				if info.FirstInput == "" && r.Message.Role == llm.RoleUser {
					info.FirstInput = oneLine(r.Message.Content, 60)
				}
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Modified.Equal(out[j].Modified) {
			return out[i].Modified.After(out[j].Modified)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// ResolveSession picks the session to use: the latest with cont, the named
// one with resume, else a new id. resumed tells which.
func ResolveSession(dir string, cont bool, resume string, now time.Time) (id string, resumed bool, err error) {
	resume = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(resume), sessionPrefix), ".jsonl")
	switch {
	case cont && resume != "":
		return "", false, errors.New("--continue and --resume both given: use one")
	case resume != "":
		if strings.ContainsAny(resume, `/\`) {
			return "", false, fmt.Errorf("--resume %q: a session id has no path separators", resume)
		}
		if _, err := os.Stat(SessionPath(dir, resume)); err != nil {
			return "", false, fmt.Errorf("%w: %s has no chat-%s.jsonl (the /sessions command in a chat lists them)", ErrNoSession, dir, resume)
		}
		return resume, true, nil
	case cont:
		list, err := ListSessions(dir)
		if err != nil {
			return "", false, err
		}
		if len(list) == 0 {
			return "", false, fmt.Errorf("%w: --continue found no chat session in %s; start one without --continue", ErrNoSession, dir)
		}
		return list[0].ID, true, nil
	}
	return NewSessionID(now), false, nil
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// HistoryFile is where the chat's input history of the workspace at root
// is kept: one file per workspace, beside the sessions, hidden from
// /sessions (which lists chat-*.jsonl).
func HistoryFile(sessionsDir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(sessionsDir, ".chat-history-"+hex.EncodeToString(sum[:4]))
}
