package main

import "strings"

// combined mixes the habits in one answer: a fence around the whole
// answer (sometimes reopened by continuations) or a first preamble, then
// per continuation a random repeat or restart with a preamble before it,
// a trailer at the end. A case uses at least two different habits.
func combined(e *env, pos []int) ([]string, bool) {
	for try := 0; try < 20; try++ {
		chunks, used := e.combine(pos)
		if len(used) >= 2 {
			return chunks, true
		}
	}
	return nil, false
}

// combine writes one mixed case and the names of the habits it used.
func (e *env) combine(pos []int) ([]string, map[string]bool) {
	t := e.d.text
	used := map[string]bool{}
	chunks := cleanChunks(t, pos)
	last := len(chunks) - 1
	f, isFenced := e.fence()
	isFenced = isFenced && e.r.IntN(2) == 0
	reopen := isFenced && e.r.IntN(2) == 0
	ws := e.wsKinds()
	for i := 1; i <= last; i++ {
		e.part = i + 1
		prev := t[:pos[i]]
		body, name, from := e.body(prev, chunks[i], ws)
		if name != "" {
			used[name] = true
		}
		head := ""
		if e.r.IntN(2) == 0 {
			p := ""
			if from < len(prev) && e.r.IntN(2) == 0 {
				// Anchors name the first line repeated.
				end := len(t)
				if k := strings.IndexByte(t[from:], '\n'); k >= 0 {
					end = from + k + 1
				}
				p = e.restartPreamble(t[:end], from == 0)
			} else {
				p = e.preamble(prev, ":.!…", 4)
			}
			head = p + e.sep(3)
			used["preamble"] = true
		}
		if reopen && e.r.IntN(4) > 0 {
			head += f.open + "\n"
			used["fence-each"] = true
		}
		chunks[i] = head + body
	}
	pre, trail := e.r.IntN(3) == 0, e.r.IntN(3) == 0
	if isFenced {
		chunks[0] = e.openAnswer(f, pre) + chunks[0]
		chunks[last] = e.closeAnswer(chunks[last], f, trail)
		used["whole-fence"] = true
	} else {
		pre = pre && strings.Contains(" "+bare+" ", " "+e.d.format+" ")
		if pre {
			chunks[0] = e.firstPreamble() + e.sep(4) + chunks[0]
		}
		if trail {
			chunks[last] = e.addTrailer(chunks[last], false)
		}
	}
	if pre {
		used["preamble-first"] = true
	}
	if trail {
		used["trailer"] = true
	}
	return chunks, used
}

// body is a continuation's text from the document's point of view: clean,
// or with one of the repeat and restart habits; name is the habit's ("" for
// clean), from the offset in the document where a repeat starts (len(prev)
// for none, and for an overlap echo, which the markers announce).
func (e *env) body(prev, cont string, ws []string) (string, string, int) {
	var s string
	var ok bool
	name := ""
	switch e.r.IntN(10) {
	case 0, 1:
		return cont, "", len(prev)
	case 2:
		s, ok = repeatWords(e.r, e.d, prev, cont, false)
		name = "repeat-chars"
	case 3:
		s, ok = repeatTail(e.r, e.d, prev, cont, false)
		name = "repeat-tail"
	case 4:
		s, ok = repeatLines(e.r, e.d, prev, cont, false)
		name = "repeat-lines"
	case 5:
		s, ok = restartRecord(e.r, e.d, prev, cont, false)
		name = "restart-record"
	case 6:
		s, ok = markers(e.r, e.d, prev, cont, false)
		if !ok {
			return cont, "", len(prev)
		}
		return s, "overlap-markers", len(prev)
	case 7:
		s, ok = prev+cont, prev != ""
		name = "restart-top"
	case 8:
		v := wsVary(e, prev, ws)
		s, ok = v+cont, v != prev
		name = "restart-top-ws"
		if ok {
			return s, name, 0
		}
	default:
		i := e.earlierLine(prev)
		s, ok = prev[i:]+cont, i < len(prev)
		if ok && e.r.IntN(3) == 0 {
			s = wsVary(e, prev[i:], ws) + cont
		}
		name = "restart-earlier"
		if ok {
			return s, name, i
		}
	}
	if !ok {
		return cont, "", len(prev)
	}
	return s, name, len(prev) - (len(s) - len(cont))
}
