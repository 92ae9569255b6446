package jobs

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DefaultSchemaCacheSize is how many compiled schemas a worker keeps: a
// merge and every remerge of a job validate its merged document against the
// same schema, and compiling it is the costly part.
const DefaultSchemaCacheSize = 256

// schemaCache keeps the schemas of recent jobs compiled, least recently
// used first out. It is keyed by job and by the schema's hash, so a job
// whose stored schema changed compiles again. A schema that does not
// compile is kept too, with its error, so it is not retried at every merge.
type schemaCache struct {
	size     int
	compile  func(json.RawMessage) (*jsonschema.Schema, error)
	compiled func() // told of every compilation (a metric)

	mu    sync.Mutex
	order *list.List // of *schemaEntry, most recent first
	byKey map[schemaKey]*list.Element
}

type schemaKey struct {
	job  string
	hash [sha256.Size]byte
}

type schemaEntry struct {
	key    schemaKey
	schema *jsonschema.Schema
	err    error
}

func newSchemaCache(size int, compiled func()) *schemaCache {
	if size <= 0 {
		size = DefaultSchemaCacheSize
	}
	if compiled == nil {
		compiled = func() {}
	}
	return &schemaCache{size: size, compile: compileSchema, compiled: compiled, order: list.New(),
		byKey: make(map[schemaKey]*list.Element)}
}

// get returns job's schema compiled, compiling it on first use. Two merges
// of one job at once may both compile it; both results are the same.
func (c *schemaCache) get(jobID string, raw json.RawMessage) (*jsonschema.Schema, error) {
	k := schemaKey{job: jobID, hash: sha256.Sum256(raw)}
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*schemaEntry)
		c.mu.Unlock()
		return e.schema, e.err
	}
	c.mu.Unlock()
	sch, err := c.compile(raw)
	c.compiled()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; !ok {
		c.byKey[k] = c.order.PushFront(&schemaEntry{key: k, schema: sch, err: err})
		for c.order.Len() > c.size {
			old := c.order.Remove(c.order.Back()).(*schemaEntry)
			delete(c.byKey, old.key)
		}
	}
	return sch, err
}
