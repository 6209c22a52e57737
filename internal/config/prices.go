package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 // prompt tokens (uncached)
	Output float64 // completion tokens
	// CachedInput is a prompt token read from the provider's cache and
	// CacheWrite one written to it; each is Input when not given.
	CachedInput float64
	CacheWrite  float64
}

const keyPrices = "prices"

// FormatUSD writes an amount of dollars with its cents and every further
// digit it has: a budget of $0.015 must not read as $0.01.
func FormatUSD(v float64) string {
	exact, cents := strconv.FormatFloat(v, 'f', -1, 64), strconv.FormatFloat(v, 'f', 2, 64)
	if len(exact) < len(cents) {
		return "$" + cents
	}
	return "$" + exact
}

// PriceOf is the price of model, and false when the config has none.
func (c Config) PriceOf(model string) (Price, bool) {
	p, ok := c.Prices[model]
	return p, ok
}

// applyPricesNode parses the prices mapping of a file:
//
//	prices:
//	  gpt-4o-mini: {input: 0.15, output: 0.60}
//	  claude-sonnet-4-5: {input: 3, output: 15, cached_input: 0.30, cache_write: 3.75}
func (st *state) applyPricesNode(v *yaml.Node, o origin) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	before := len(st.errs)
	fail := func(line int, format string, args ...any) {
		at := o
		at.line = line
		st.errs = append(st.errs, &Error{Where: at.where(), Key: keyPrices, Msg: fmt.Sprintf(format, args...)})
	}
	const shape = "a mapping of model name to {input: USD per 1M prompt tokens, output: USD per 1M completion tokens, optionally cached_input and cache_write}"
	if v.Kind != yaml.MappingNode {
		fail(v.Line, "want %s, got %s", shape, describe(v))
		return
	}
	prices := map[string]Price{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		mk, mv := v.Content[i], resolve(v.Content[i+1])
		model := mk.Value
		if mk.Kind != yaml.ScalarNode || strings.TrimSpace(model) == "" {
			fail(mk.Line, "model names must be plain strings")
			continue
		}
		if _, dup := prices[model]; dup {
			fail(mk.Line, "model %q is priced twice: keep one", model)
			continue
		}
		if mv.Kind != yaml.MappingNode {
			fail(mk.Line, "model %q: want {input: X, output: Y} in USD per 1M tokens, got %s", model, describe(mv))
			continue
		}
		var p Price
		have := map[string]bool{}
		for j := 0; j+1 < len(mv.Content); j += 2 {
			fk, fv := mv.Content[j], resolve(mv.Content[j+1])
			var dst *float64
			switch fk.Value {
			case "input":
				dst = &p.Input
			case "output":
				dst = &p.Output
			case "cached_input":
				dst = &p.CachedInput
			case "cache_write":
				dst = &p.CacheWrite
			default:
				fail(fk.Line, "model %q: unknown field %q (known: input, output, cached_input, cache_write)", model, fk.Value)
				continue
			}
			have[fk.Value] = true
			x, err := strconv.ParseFloat(strings.TrimSpace(fv.Value), 64)
			if fv.Kind != yaml.ScalarNode || err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				fail(fv.Line, "model %q: %s must be 0 or more USD per 1M tokens, e.g. 0.15", model, fk.Value)
				continue
			}
			*dst = x
		}
		for _, f := range []string{"input", "output"} {
			if !have[f] {
				fail(mk.Line, "model %q: %s is missing (USD per 1M tokens)", model, f)
			}
		}
		if !have["cached_input"] {
			p.CachedInput = p.Input
		}
		if !have["cache_write"] {
			p.CacheWrite = p.Input
		}
		prices[model] = p
	}
	if len(st.errs) == before {
		st.cfg.Prices = prices
		st.origins[keyPrices] = o
	}
}

func formatPrices(p map[string]Price) string {
	if len(p) == 0 {
		return "(none)"
	}
	models := make([]string, 0, len(p))
	for m := range p {
		models = append(models, m)
	}
	sort.Strings(models)
	var parts []string
	for _, m := range models {
		pr := p[m]
		part := fmt.Sprintf("%s: in $%g/M, out $%g/M", m, pr.Input, pr.Output)
		if pr.CachedInput != pr.Input {
			part += fmt.Sprintf(", cached in $%g/M", pr.CachedInput)
		}
		if pr.CacheWrite != pr.Input {
			part += fmt.Sprintf(", cache write $%g/M", pr.CacheWrite)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
