package gateway

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"
)

// withStates returns a copy of g, which may be shared, with each node's
// state and wave taken from steps.
func (g *Graph) withStates(steps []GraphStep) *Graph {
	c := *g
	c.Nodes = slices.Clone(g.Nodes)
	state := make(map[string]string, len(steps))
	for _, s := range steps {
		if _, ok := state[s.ID]; !ok {
			state[s.ID] = s.State
		}
	}
	for i := range c.Nodes {
		c.Nodes[i].State = state[c.Nodes[i].ID]
	}
	return &c
}

// layoutCache keeps recent layouts by layoutKey, so the graph of a run,
// asked again each time a step changes state, is laid out once. It holds
// at most layoutCacheSize layouts, dropping the oldest.
var layoutCache = &graphCache{byKey: map[[32]byte]*Graph{}}

const layoutCacheSize = 256

type graphCache struct {
	mu    sync.Mutex
	byKey map[[32]byte]*Graph
	order [][32]byte
}

func (c *graphCache) get(key [32]byte) (*Graph, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.byKey[key]
	return g, ok
}

func (c *graphCache) put(key [32]byte, g *Graph) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	if len(c.order) >= layoutCacheSize {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
	c.byKey[key] = g
	c.order = append(c.order, key)
}

// layoutKey digests what a layout depends on: each step's id, kind, agent
// (the box's width), wave and parents, in order; not its state.
func layoutKey(steps []GraphStep) [32]byte {
	h := sha256.New()
	field := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	for _, s := range steps {
		field(s.ID)
		field(s.Kind)
		field(s.Agent)
		_ = binary.Write(h, binary.LittleEndian, int64(s.Wave))
		_ = binary.Write(h, binary.LittleEndian, uint32(len(s.DependsOn)))
		for _, d := range s.DependsOn {
			field(d)
		}
	}
	return [32]byte(h.Sum(nil))
}
