package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Notify is where planagent tells a person that a run needs them or ended:
// any of a command (the event's JSON on its stdin), a webhook (the JSON
// POSTed; header values may be ${VAR}, read from the environment when sent
// and never written anywhere) and an ntfy-style push URL (a line of text
// POSTed). Events limits which events are sent (all when empty); Timeout
// bounds each sink (default 10s).
type Notify struct {
	Command []string          `json:"command,omitempty"`
	Webhook string            `json:"webhook,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Ntfy    string            `json:"ntfy,omitempty"`
	Events  []string          `json:"events,omitempty"`
	Timeout time.Duration     `json:"timeout,omitempty"`
}

// NotifyEvents are the events a Notify can be sent.
var NotifyEvents = []string{"run_finished", "paused", "task_failed", "plan_awaiting"}

const keyNotify = "notify"

// applyNotifyNode parses the notify mapping of a file:
//
//	notify:
//	  command: [notify-send, CodeAgent]      # or one string, run with sh -c
//	  webhook: https://hooks.example.com/T/1
//	  headers: {Authorization: "Bearer ${HOOK_TOKEN}"}
//	  ntfy: https://ntfy.sh/my-topic
//	  events: [run_finished, task_failed]
//	  timeout: 5s
func (st *state) applyNotifyNode(v *yaml.Node, o origin) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	before := len(st.errs)
	fail := func(line int, format string, args ...any) {
		at := o
		at.line = line
		st.errs = append(st.errs, &Error{Where: at.where(), Key: keyNotify, Msg: fmt.Sprintf(format, args...)})
	}
	if v.Kind != yaml.MappingNode {
		fail(v.Line, "want a mapping with any of command, webhook, headers, ntfy, events, timeout; got %s", describe(v))
		return
	}
	n := &Notify{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], resolve(v.Content[i+1])
		switch k.Value {
		case "command":
			switch val.Kind {
			case yaml.ScalarNode:
				if strings.TrimSpace(val.Value) != "" {
					n.Command = []string{"/bin/sh", "-c", val.Value}
				}
			case yaml.SequenceNode:
				for _, a := range val.Content {
					if a.Kind != yaml.ScalarNode {
						fail(a.Line, "command: want a list of strings")
					}
					n.Command = append(n.Command, a.Value)
				}
			default:
				fail(val.Line, "command: want a string (run with sh -c) or a list of strings, got %s", describe(val))
			}
		case "webhook", "ntfy":
			u := strings.TrimSpace(val.Value)
			if val.Kind != yaml.ScalarNode || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
				fail(val.Line, "%s: want an http:// or https:// URL", k.Value)
				continue
			}
			if k.Value == "webhook" {
				n.Webhook = u
			} else {
				n.Ntfy = u
			}
		case "headers":
			if val.Kind != yaml.MappingNode {
				fail(val.Line, "headers: want a mapping of Name: value (values may use ${VAR})")
				continue
			}
			n.Headers = map[string]string{}
			for j := 0; j+1 < len(val.Content); j += 2 {
				n.Headers[val.Content[j].Value] = val.Content[j+1].Value
			}
		case "events":
			if val.Kind != yaml.SequenceNode {
				fail(val.Line, "events: want a list of %s", strings.Join(NotifyEvents, ", "))
				continue
			}
			for _, e := range val.Content {
				if !contains(NotifyEvents, e.Value) {
					fail(e.Line, "events: unknown event %q (known: %s)", e.Value, strings.Join(NotifyEvents, ", "))
					continue
				}
				n.Events = append(n.Events, e.Value)
			}
		case "timeout":
			d, err := time.ParseDuration(strings.TrimSpace(val.Value))
			if err != nil || d <= 0 {
				fail(val.Line, "timeout: want a duration such as 10s")
				continue
			}
			n.Timeout = d
		default:
			fail(k.Line, "unknown field %q (known: command, webhook, headers, ntfy, events, timeout)", k.Value)
		}
	}
	if n.Headers != nil && n.Webhook == "" {
		fail(v.Line, "headers are sent with the webhook: set webhook too")
	}
	if len(st.errs) == before {
		st.cfg.Notify = n
		st.origins[keyNotify] = o
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// formatNotify shows the sinks without header values (they may be secrets).
func formatNotify(n *Notify) string {
	if n == nil {
		return "(none)"
	}
	var parts []string
	if len(n.Command) > 0 {
		parts = append(parts, "command "+strings.Join(n.Command, " "))
	}
	if n.Webhook != "" {
		w := "webhook " + n.Webhook
		if len(n.Headers) > 0 {
			names := make([]string, 0, len(n.Headers))
			for h := range n.Headers {
				names = append(names, h)
			}
			sort.Strings(names)
			w += " (headers " + strings.Join(names, ", ") + ")"
		}
		parts = append(parts, w)
	}
	if n.Ntfy != "" {
		parts = append(parts, "ntfy "+n.Ntfy)
	}
	if len(n.Events) > 0 {
		parts = append(parts, "events "+strings.Join(n.Events, ", "))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, "; ")
}
