package pipeline

import (
	"sync"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// How a replica runs pipelines. Every fact lives in the runs bucket (see
// runstore.go); a replica only caches what it read or wrote: the spec and
// the step records never change once written, and the header is cached with
// its revision, so the replica that wrote the last revision updates it
// without reading it first (a stale copy fails the compare-and-set, and
// the replica reads it again).

// maxCachedRuns bounds the runs a replica caches; past it the cache starts
// again empty.
const maxCachedRuns = 4096

// maxCachedRecords bounds the step records a replica caches across its
// runs (a few hundred bytes each): past it a record is read from KV when
// needed (a wave's end reads the ones it lacks in parallel), so many wide
// runs at once do not hold every record in memory. A wave of up to this
// many steps settles from the cache alone.
const maxCachedRecords = 10_000

type cachedHeader struct {
	h   *state.RunHeader // shared: never mutated (updates work on a clone)
	rev uint64
}

type runCache struct {
	mu      sync.Mutex
	specs   map[string]*state.RunSpec
	headers map[string]cachedHeader
	records map[string]map[string]cachedRecord
	nrecs   int // records cached, across runs
	// states: per run, the state this replica last wrote, with its revision.
	states map[string]cachedState
	// ahead: per run, the steps whose tasks went out ahead of the header
	// that starts their wave, and a channel closed once that header's
	// write is over (see dispatchAhead).
	ahead map[string]*aheadWave
}

type cachedState struct {
	raw []byte
	rev uint64
	// st is raw decoded, when known: shared, never mutated (an update
	// works on state.Store.ApplyRunStateFrom's clone), so the next step
	// of the run need not decode the whole state again.
	st *schemas.ConversationState
}

// state returns the run's state as this replica last wrote it (nil when
// not known).
func (c *runCache) state(run string) ([]byte, uint64) {
	raw, rev, _ := c.stateWith(run)
	return raw, rev
}

// stateWith is state with its decoded form (nil when not kept).
func (c *runCache) stateWith(run string) ([]byte, uint64, *schemas.ConversationState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.states[run]
	return e.raw, e.rev, e.st
}

// putState caches the run's state as written at rev; nil forgets it.
func (c *runCache) putState(run string, raw []byte, rev uint64) { c.putStateWith(run, raw, rev, nil) }

// putStateWith is putState with raw's decoded form st (nil: not known),
// which the cache then owns: nobody may change it.
func (c *runCache) putStateWith(run string, raw []byte, rev uint64, st *schemas.ConversationState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw == nil || c.specs[run] == nil {
		delete(c.states, run)
		return
	}
	if c.states == nil {
		c.states = map[string]cachedState{}
	}
	c.states[run] = cachedState{raw, rev, st}
}

type aheadWave struct {
	steps map[string]bool // not yet followed up
	done  chan struct{}
}

// markAhead notes that the tasks of steps went out ahead of their header
// and returns the function that says the header's write is over.
func (c *runCache) markAhead(run string, steps []string) (over func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ahead == nil {
		c.ahead = map[string]*aheadWave{}
	}
	a := c.ahead[run]
	if a == nil {
		a = &aheadWave{steps: map[string]bool{}}
		c.ahead[run] = a
	}
	for _, id := range steps {
		a.steps[id] = true
	}
	done := make(chan struct{})
	a.done = done
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// takeAhead reports whether step's task went out ahead of its header, and
// forgets it: the follow-up of the header publishes it no more.
func (c *runCache) takeAhead(run, step string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.ahead[run]
	if a == nil || !a.steps[step] {
		return false
	}
	delete(a.steps, step)
	return true
}

// aheadWrite returns the channel closed when the header write that follows
// tasks sent ahead in run is over, nil when none is under way.
func (c *runCache) aheadWrite(run string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.ahead[run]; a != nil {
		return a.done
	}
	return nil
}

func (c *runCache) spec(id string) *state.RunSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.specs[id]
}

func (c *runCache) putSpec(sd *state.RunSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.specs == nil || len(c.specs) >= maxCachedRuns {
		c.specs, c.headers, c.records, c.ahead, c.states = map[string]*state.RunSpec{}, map[string]cachedHeader{}, map[string]map[string]cachedRecord{}, nil, nil
		c.nrecs = 0
	}
	c.specs[sd.ID] = sd
}

func (c *runCache) header(id string) (*state.RunHeader, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.headers[id]
	return e.h, e.rev
}

func (c *runCache) putHeader(h *state.RunHeader, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.headers == nil || c.specs[h.ID] == nil {
		return // cache headers of runs whose spec is cached (bounded with it)
	}
	if e, ok := c.headers[h.ID]; !ok || rev > e.rev {
		c.headers[h.ID] = cachedHeader{h, rev}
	}
}

// cachedRecord is a step record this replica wrote or settled (its end
// event is this replica's to send, and was sent in order: told) or only
// read from KV (another replica's to send).
type cachedRecord struct {
	rec  *state.StepState
	told bool
}

func (c *runCache) record(run, step string) *state.StepState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records[run][step].rec
}

// told reports whether this replica settled the record of step: the event
// of its end went out from here, before any later event of the run.
func (c *runCache) told(run, step string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records[run][step].told
}

// putRecord caches a record this replica settles (see told); putRead one
// it only read.
func (c *runCache) putRecord(run string, rec *state.StepState) { c.put(run, rec, true) }
func (c *runCache) putRead(run string, rec *state.StepState)   { c.put(run, rec, false) }

func (c *runCache) put(run string, rec *state.StepState, told bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.records == nil || c.specs[run] == nil {
		return
	}
	m := c.records[run]
	e, have := m[rec.ID]
	if !have && c.nrecs >= maxCachedRecords {
		return
	}
	if m == nil {
		m = map[string]cachedRecord{}
		c.records[run] = m
	}
	if !have {
		c.nrecs++
	}
	m[rec.ID] = cachedRecord{rec: rec, told: told || e.told}
}

func (c *runCache) drop(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.specs, run)
	delete(c.headers, run)
	c.nrecs -= len(c.records[run])
	delete(c.records, run)
	delete(c.ahead, run)
	delete(c.states, run)
}
