package main

import (
	"example.com/shop/server/api"
	"example.com/shop/server/store"
)

func main() {
	h := &api.Handler{Store: store.NewStore()}
	_ = h.ListItems()
}
