package proxy

import "sync"

// maxDocs is how many conversations' last requests are kept parsed in memory: a request
// that extends one is read from it (pipeline.NewFrom, transcript.Reparse), parsing and
// counting only its new messages. Each holds a request (its bytes, parse and counts, a few
// times the body); a conversation beyond them is read whole, as a first request is.
const maxDocs = 8

// lastOf holds a value of each conversation's last request (the pipeline's output Doc,
// the client's body parsed), by conversation key, the least recently used dropped first.
// A value is lent to one request at a time: take removes it, so that two requests of one
// conversation at once do not share one (a Doc fills in its counts as it is read), and the
// second reads its body whole.
type lastOf[V any] struct {
	mu    sync.Mutex
	order []string // least recent first
	vals  map[string]V
}

// take removes and returns key's value, the zero value when none is kept.
func (c *lastOf[V]) take(key string) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vals[key]
	if ok {
		delete(c.vals, key)
		c.drop(key)
	}
	return v
}

// put keeps v as key's, dropping the least recently used past maxDocs.
func (c *lastOf[V]) put(key string, v V) {
	if key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil {
		c.vals = map[string]V{}
	}
	if _, ok := c.vals[key]; ok {
		c.drop(key)
	}
	c.vals[key] = v
	c.order = append(c.order, key)
	for len(c.order) > maxDocs {
		delete(c.vals, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *lastOf[V]) drop(key string) {
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			return
		}
	}
}
