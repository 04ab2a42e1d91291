package agents

import (
	"encoding/json"
	"sync"

	"github.com/agentmesh/agentmesh/schemas"
)

// paramsCacheSize bounds how many distinct valid params documents an
// instance remembers; paramsCacheMaxKey how long one may be.
const (
	paramsCacheSize   = 512
	paramsCacheMaxKey = 1024
)

// paramsCheck checks a task's params against the contract's params schema,
// remembering the params documents that passed: a contract's schema does
// not change while the instance runs, and most tasks of an agent repeat a
// few params ({"op": "upper"}, or none), so a repeat costs one encode and a
// map lookup instead of a schema walk. Only valid documents are kept, so a
// bad one is checked, and explained, every time.
type paramsCheck struct {
	contract schemas.AgentContract

	mu    sync.Mutex
	valid map[string]struct{}
}

func newParamsCheck(c schemas.AgentContract) *paramsCheck {
	return &paramsCheck{contract: c, valid: map[string]struct{}{}}
}

// check returns the contract's verdict on params (nil and empty alike).
func (p *paramsCheck) check(params map[string]any) error {
	if len(p.contract.Params) == 0 {
		return nil
	}
	key := "{}"
	if len(params) > 0 {
		b, err := json.Marshal(params)
		if err != nil {
			return p.contract.ValidateParams(params)
		}
		key = string(b)
	}
	p.mu.Lock()
	_, ok := p.valid[key]
	p.mu.Unlock()
	if ok {
		return nil
	}
	if err := p.contract.ValidateParams(params); err != nil {
		return err
	}
	if len(key) <= paramsCacheMaxKey {
		p.mu.Lock()
		if len(p.valid) >= paramsCacheSize {
			clear(p.valid) // start over rather than track ages
		}
		p.valid[key] = struct{}{}
		p.mu.Unlock()
	}
	return nil
}
