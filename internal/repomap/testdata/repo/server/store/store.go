package store

// Item is one product.
type Item struct {
	ID   int
	Name string
}

// Store keeps items in memory.
type Store struct{ items []Item }

// All returns every item.
func (s *Store) All() []Item { return s.items }

// NewStore makes an empty store.
func NewStore() *Store { return &Store{} }
