package fileagent

import (
	"fmt"

	"github.com/agentmesh/agentmesh/resolvers"
)

// Option configures a built-in agent of type A. Each agent package names it
// for its own type:
//
//	type Option = fileagent.Option[Agent]
type Option[A any] func(*A)

// New is the constructor of a built-in file agent. It refuses a nil store
// with an error naming the agent's package and what it needs, then applies
// opts to a, the agent with its store and its defaults, and returns it.
func New[A any, S resolvers.FileResolver](pkg string, store S, a *A, opts ...Option[A]) (*A, error) {
	if any(store) == nil {
		return nil, fmt.Errorf("%s: New needs a %s (the object store resolver)", pkg, storeKind[S]())
	}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// storeKind says what a store of type S is: a catalog (it can list and
// re-tag files) or only a resolver.
func storeKind[S any]() string {
	if _, ok := any((*S)(nil)).(*resolvers.Catalog); ok {
		return "file catalog"
	}
	return "file resolver"
}
