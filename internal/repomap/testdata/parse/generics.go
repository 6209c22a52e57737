// Package sample exercises the Go extractor.
package sample

import (
	"context"
	"fmt"
	str "strings"
)

// MaxItems caps a list.
const MaxItems = 100

const (
	// A is the first.
	A = iota
	B
	_
)

var defaultName, otherName = "x", "y"

// List is a generic list.
type List[T any] struct {
	items []T
}

// Push appends v.
func (l *List[T]) Push(v T) {
	l.items = append(l.items, v)
}

// Map applies f
// to every element.
func Map[T, U any](xs []T,
	f func(T) U,
) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// Runner runs things.
type Runner interface {
	// Run runs.
	Run(ctx context.Context) error
	fmt.Stringer
}

type (
	ID                        int64
	Pair[K comparable, V any] struct {
		K K
		V V
	}
)

func use() { _ = str.ToUpper(fmt.Sprint(1)) }
