package index

// Terms are what the index keeps of a text: its words (runs of letters, digits and '_',
// and of bytes above ASCII, so that a UTF-8 word is one), lowercased, and, of a word made
// of several parts, each part too: "parseConfig", "parse_config" and "ParseConfig" all
// give "parse" and "config" besides the word itself, and a path gives each of its names
// ("internal/cli/run.go": "internal", "cli", "run", "go"), since '/' and '.' end words. A
// query is cut the same way, so an identifier is found by any of its spellings and by its
// parts, and the whole word ranks first. Each term is kept as a 64-bit FNV-1a hash of its
// lowercased bytes: no string is made per word, and two terms share a hash about once in
// 2^64 (a false match then only adds to a score; excerpts are read from the text).

const (
	cSep = iota
	cLower
	cUpper
	cDigit
	cUnder
	cHigh
)

// class is each byte's kind.
var class = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = cLower
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = cUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit
	}
	t['_'] = cUnder
	for c := 0x80; c < 0x100; c++ {
		t[c] = cHigh
	}
	return t
}()

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	// maxParts is how many parts of one word are kept as terms; a longer word (a long
	// generated name) gives its first parts.
	maxParts = 16
	// maxWord is the longest word cut into parts: longer ones (base64, minified code) are
	// one term.
	maxWord = 64
)

// Terms calls emit with the hash of each term of text, in order: each word of two bytes or
// more, then, when it has several, its parts of two bytes or more.
func Terms(text []byte, emit func(h uint64)) {
	var buf [64]uint64
	for _, h := range appendTerms(buf[:0], text) {
		emit(h)
	}
}

// appendTerms appends the hash of each term of text to dst, in the order Terms gives them.
// Most words are of one part, the word itself (lower case words, numbers, a capital and
// lower case letters): they are hashed in a loop of their own, which looks at each byte
// once, and the others from their start in the loop that finds the parts; a word longer
// than maxWord, whose parts are not kept, is hashed to its end without looking for them.
func appendTerms(dst []uint64, text []byte) []uint64 {
	var parts [maxParts]uint64
	n := len(text)
	for i := 0; i < n; {
		for i < n && class[text[i]] == cSep {
			i++
		}
		if i >= n {
			break
		}
		start := i
		h := uint64(fnvOffset)
		ph := uint64(fnvOffset)
		plen, np, prev := 0, 0, uint8(cSep)
		// a word of one part
		j, k0 := i, class[text[i]]
		if k0 == cUpper {
			h = (h ^ uint64(text[j]+'a'-'A')) * fnvPrime
			j++
			k0 = cLower
		}
		if k0 != cUnder {
			for j < n && class[text[j]] == k0 {
				h = (h ^ uint64(text[j])) * fnvPrime
				j++
			}
			if j >= n || class[text[j]] == cSep {
				if j-start >= 2 {
					dst = append(dst, h|zero(h))
				}
				i = j
				continue
			}
			if j-start >= maxWord {
				// longer than maxWord, so not cut: only the word's hash
				j, h = hashRest(text, j, h)
				dst = append(dst, h|zero(h))
				i = j
				continue
			}
			// The word goes on: the bytes crossed are its first part (a capital and lower
			// case letters, or a run of one kind, which no rule below cuts), hashed alike
			// as the word and as the part; the loop below carries on from there, not from
			// the word's start again.
			ph, plen, prev = h, j-start, class[text[j-1]]
			i = j
		}
		endPart := func() {
			if plen >= 2 && np < maxParts {
				parts[np] = ph
				np++
			}
			ph, plen = fnvOffset, 0
		}
		nparts := 0 // parts seen, short ones too
		for i < n {
			c := text[i]
			k := class[c]
			if k == cSep {
				break
			}
			if i-start == maxWord {
				// too long to be cut: only the word's hash is kept
				i, h = hashRest(text, i, h)
				break
			}
			lc := c
			if k == cUpper {
				lc = c + 'a' - 'A'
			}
			h = (h ^ uint64(lc)) * fnvPrime
			if k == cUnder {
				if plen > 0 {
					endPart()
					nparts++
				}
				prev = k
				i++
				continue
			}
			// a part ends at lower→Upper, before the capital that starts a word after an
			// acronym (HTTPServer: HTTP, Server), and between letters and digits
			if plen > 0 && (k == cUpper && prev == cLower ||
				k == cDigit && prev != cDigit || k != cDigit && prev == cDigit ||
				k == cUpper && prev == cUpper && i+1 < n && class[text[i+1]] == cLower) {
				endPart()
				nparts++
			}
			ph = (ph ^ uint64(lc)) * fnvPrime
			plen++
			prev = k
			i++
		}
		if plen > 0 {
			endPart()
			nparts++
		}
		if i-start >= 2 {
			dst = append(dst, h|zero(h))
		}
		if nparts > 1 && i-start <= maxWord {
			for j := 0; j < np; j++ {
				dst = append(dst, parts[j]|zero(parts[j]))
			}
		}
	}
	return dst
}

// zero is 1 when h is 0, which no term's hash is (the index's tables take 0 for a free
// slot), else 0.
func zero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return 0
}

// Hash is the hash of one term as Terms makes it: s lowercased (ASCII).
func Hash(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h | zero(h)
}

// QueryTerms are the distinct terms of a query, each with how often the query has it.
func QueryTerms(q string) map[uint64]int {
	out := map[uint64]int{}
	Terms([]byte(q), func(h uint64) { out[h]++ })
	return out
}

// hashRest goes on hashing a word from text[i] (lower-cased) to its end: the index of the
// separator after it (or len(text)) and the word's hash.
func hashRest(text []byte, i int, h uint64) (int, uint64) {
	for ; i < len(text); i++ {
		c := text[i]
		k := class[c]
		if k == cSep {
			break
		}
		if k == cUpper {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * fnvPrime
	}
	return i, h
}
