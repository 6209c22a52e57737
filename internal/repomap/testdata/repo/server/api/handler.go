package api

import "example.com/shop/server/store"

// Handler serves the shop API.
type Handler struct {
	Store *store.Store
}

// ListItems returns every item.
func (h *Handler) ListItems() []store.Item { return h.Store.All() }
