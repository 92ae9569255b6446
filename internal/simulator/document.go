package simulator

import (
	"sync"
)

// Document returns the full document the simulator produces for spec. It is
// a pure function of (Format, Size, Seed): faults, behavior and reasoning change
// how the document is delivered, never what it is.
func Document(spec Spec) string {
	if spec.Size <= 0 {
		spec.Size = defaultSize
	}
	if spec.Format == "" {
		spec.Format = FormatText
	}
	return generate(spec.Format, spec.Size, spec.Seed)
}

// DocumentFor returns the document the simulator produces for a prompt
// containing a directive. ok is false when the prompt has no valid directive;
// doc and spec are then the defaults the server would use for a prompt
// without one.
func DocumentFor(prompt string) (doc string, spec Spec, ok bool) {
	spec, found, err := parseSpec(prompt)
	if err != nil {
		return "", spec, false
	}
	if !found {
		spec = DefaultSpec()
	}
	return Document(spec), spec, found
}

// docKey is everything a document depends on.
type docKey struct {
	format string
	size   int
	seed   int64
}

// docCache memoizes generated documents so a continuation costs a slice, not
// a regeneration. It is bounded: when full it is reset, which is cheap because
// generation is deterministic.
type docCache struct {
	mu   sync.RWMutex
	docs map[docKey]string
	max  int
}

func newDocCache(max int) *docCache {
	return &docCache{docs: make(map[docKey]string), max: max}
}

func (c *docCache) get(spec Spec) string {
	k := docKey{spec.Format, spec.Size, spec.Seed}
	c.mu.RLock()
	doc, ok := c.docs[k]
	c.mu.RUnlock()
	if ok {
		return doc
	}
	doc = Document(spec)
	c.mu.Lock()
	if len(c.docs) >= c.max {
		clear(c.docs)
	}
	c.docs[k] = doc
	c.mu.Unlock()
	return doc
}

// Stalls reports whether a conversation that continues each reply from the
// previous one (Responses previous_response_id, or chat history) asking
// model for at most maxTokens per call, without an overlap instruction and
// without faults, never finishes the document: at some continuation what
// the behaviour repeats (restart_line and ignore_overlap restart the whole
// incomplete line, overlap echoes three lines) takes the whole budget, so
// the model writes nothing new and, asked again, writes the same. A real
// model that restarts a line longer than its budget loops the same way;
// it stalls only on documents whose lines are that long. restart_top never
// stalls (it reproduces at most half its budget); the whole-answer habits
// (wrap, wrap_each, chatty) stall only on budgets their fence lines or
// remarks fill, as at every turn the same extras take the same room.
func Stalls(spec Spec, model string, maxTokens int) bool {
	if spec.Size <= 0 {
		spec.Size = defaultSize
	}
	if spec.Format == "" {
		spec.Format = FormatText
	}
	doc := Document(spec)
	offset := 0
	for depth := 0; ; depth++ {
		t := produce(turnInput{doc: doc, spec: spec, offset: offset, depth: depth, maxTokens: maxTokens, model: model})
		switch {
		case t.status != statusIncomplete || t.reason != reasonMaxOutputTokens:
			return false
		case t.end == offset:
			return true // no progress: the next turn is this one again
		}
		offset = t.end
	}
}
