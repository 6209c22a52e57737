package config

import (
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/catalog"
)

// applyCatalog fills what the settings leave unset from the model catalog:
// the context window, a reserved output above what the model can write,
// and the prices of the model and the summary model. Whatever the user set
// (file, env, flag) wins, field by field. It returns the entries used.
func (st *state) applyCatalog(lookup func(baseURL, model string) (catalog.Model, bool)) []catalog.Model {
	var used []catalog.Model
	c := &st.cfg
	m, ok := lookup(c.BaseURL, c.Model)
	if ok {
		used = append(used, m)
		from := origin{kind: fromCatalog, name: m.Name()}
		if st.origins["context_window"].kind == fromDefault && m.ContextWindow > 0 {
			c.ContextWindow = m.ContextWindow
			st.origins["context_window"] = from
		}
		// The default reservation is sent as max_tokens: a model that
		// cannot write that much would refuse every request.
		if st.origins["reserved_output"].kind == fromDefault && m.MaxOutput > 0 && m.MaxOutput < c.ReservedOutput {
			c.ReservedOutput = m.MaxOutput
			st.origins["reserved_output"] = from
		}
		st.priceFrom(c.Model, m)
		// A model that does not reason refuses (or ignores) the effort and
		// the thinking: none is sent.
		if !m.Reasoning && (c.ReasoningEffort != "" || c.ThinkingBudget > 0) {
			st.warnings = append(st.warnings, fmt.Sprintf(
				"reasoning_effort %q and thinking_budget %d are not sent: the model catalog says %s does not reason",
				c.ReasoningEffort, c.ThinkingBudget, m.Name()))
			c.ReasoningEffort, c.ThinkingBudget = "", 0
			dropped := origin{kind: fromCatalog, name: m.Name() + " does not reason: not sent"}
			st.origins["reasoning_effort"], st.origins["thinking_budget"] = dropped, dropped
		}
	}
	if s := c.SummaryModel; s != "" && s != c.Model {
		if sm, ok := lookup(c.BaseURL, s); ok {
			used = append(used, sm)
			st.priceFrom(s, sm)
		}
	}
	return used
}

// priceFrom adds m's catalog price under the configured model name unless
// the config prices that model itself.
func (st *state) priceFrom(name string, m catalog.Model) {
	if _, set := st.cfg.Prices[name]; set || !m.Priced {
		return
	}
	if st.cfg.Prices == nil {
		st.cfg.Prices = map[string]Price{}
	}
	p := m.Price
	st.cfg.Prices[name] = Price{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite}
	st.catalogPriced = append(st.catalogPriced, m.Name())
}

// pricesSource says where the prices came from: the file, the catalog, or both.
func pricesSource(o origin, fromCatalog []string) Source {
	src := o.source()
	if len(fromCatalog) == 0 {
		return src
	}
	cat := Source("catalog: " + strings.Join(fromCatalog, ", "))
	if src == SourceDefault {
		return cat
	}
	return src + "; " + cat
}
