package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Toleration is one entry of kube_tolerations: key[=value]:effect. Without
// a value it tolerates the taint whatever its value (operator Exists).
type Toleration struct {
	Key, Value, Effect string
}

// TaintEffects are the effects a kube_tolerations entry may name.
var TaintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

var (
	// A label key: an optional DNS prefix and a name; a value: the name part.
	kubeLabelKey   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	kubeLabelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

// ParseNodeSelector parses kube_node_selector, "key=value,key2=value2".
func ParseNodeSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(s) {
		k, v, ok := strings.Cut(item, "=")
		if !ok || !kubeLabelKey.MatchString(k) || !kubeLabelValue.MatchString(v) {
			return nil, fmt.Errorf("%q is not key=value with a node label key and value, e.g. disktype=ssd", item)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTolerations parses kube_tolerations, "key[=value]:Effect,...".
func ParseTolerations(s string) ([]Toleration, error) {
	var out []Toleration
	for _, item := range splitList(s) {
		kv, effect, ok := strings.Cut(item, ":")
		k, v, _ := strings.Cut(kv, "=")
		if !ok || !kubeLabelKey.MatchString(k) || !kubeLabelValue.MatchString(v) || !slices.Contains(TaintEffects, effect) {
			return nil, fmt.Errorf("%q is not key[=value]:effect with effect %s, e.g. gpu=true:NoSchedule", item, strings.Join(TaintEffects, ", "))
		}
		out = append(out, Toleration{Key: k, Value: v, Effect: effect})
	}
	return out, nil
}
