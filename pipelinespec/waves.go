package pipelinespec

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCycle reports a pipeline whose depends_on edges form a cycle.
var ErrCycle = errors.New("dependency cycle")

// Waves groups the steps of spec into topological levels: wave 0 holds the
// steps without parents, wave n the steps whose deepest parent is in wave
// n-1. Steps keep their spec order inside a wave. A cycle is an error
// wrapping ErrCycle that names the cycle ("a -> b -> a"). References to
// unknown steps are ignored here (spec.Validate reports them).
func Waves(spec PipelineSpec) ([][]string, error) {
	index := make(map[string]int, len(spec.Steps))
	for i, s := range spec.Steps {
		if _, dup := index[s.ID]; !dup {
			index[s.ID] = i
		}
	}
	if cyc := findCycle(spec, index); cyc != nil {
		return nil, fmt.Errorf("%w: %s; remove one of these depends_on edges", ErrCycle, strings.Join(cyc, " -> "))
	}
	level := make(map[string]int, len(spec.Steps))
	var depth func(id string) int
	depth = func(id string) int {
		if l, ok := level[id]; ok {
			return l
		}
		l := 0
		for _, d := range spec.Steps[index[id]].DependsOn {
			if _, ok := index[d]; ok && d != id {
				l = max(l, depth(d)+1)
			}
		}
		level[id] = l
		return l
	}
	var waves [][]string
	seen := map[string]bool{}
	for _, s := range spec.Steps {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		l := depth(s.ID)
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], s.ID)
	}
	return waves, nil
}

// findCycle returns the first cycle found as a path that starts and ends at
// the same step, or nil.
func findCycle(spec PipelineSpec, index map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range spec.Steps[index[id]].DependsOn {
			if _, ok := index[d]; !ok || d == id { // self-dependency is reported by Validate
				continue
			}
			switch color[d] {
			case grey:
				// The stack runs d, x1, ..., id, each depending on the next,
				// and id depends on d: in execution order (parent -> child)
				// the cycle is d -> id -> ... -> x1 -> d.
				path := []string{d}
				for i := len(stack) - 1; i >= 0 && stack[i] != d; i-- {
					path = append(path, stack[i])
				}
				return append(path, d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for _, s := range spec.Steps {
		if color[s.ID] == white {
			if c := visit(s.ID); c != nil {
				return c
			}
		}
	}
	return nil
}
