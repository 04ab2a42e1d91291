package agents

import (
	"container/list"
	"sync"
)

// doneSet remembers the ids of recently finished tasks so that a redelivery
// of a task this instance already answered is acked without running it again.
type doneSet struct {
	mu    sync.Mutex
	max   int
	order *list.List
	index map[string]*list.Element
}

func newDoneSet(max int) *doneSet {
	return &doneSet{max: max, order: list.New(), index: make(map[string]*list.Element, max)}
}

func (d *doneSet) add(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.index[id]; ok {
		d.order.MoveToFront(e)
		return
	}
	d.index[id] = d.order.PushFront(id)
	for d.order.Len() > d.max {
		old := d.order.Back()
		d.order.Remove(old)
		delete(d.index, old.Value.(string))
	}
}

func (d *doneSet) has(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.index[id]
	return ok
}
