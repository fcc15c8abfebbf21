package tokens

// o200kPattern is o200k_base's split regex as tiktoken-go builds it, for reference
// (see pretokenize.go). U is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W is
// [\p{Ll}\p{Lm}\p{Lo}\p{M}], P is [^\r\n\p{L}\p{N}] and C is the contraction suffix
// (?i:'s|'t|'re|'ve|'m|'ll|'d):
//
//	P?U*W+C? | P?U+W*C? | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//
// Lm, Lo and marks are in both U and W ("both" below); Lu and Lt only in U; Ll only in
// W. Marks are in P too, which matters for backtracking.
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
	`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
	`|\p{N}{1,3}` +
	`| ?[^\s\p{L}\p{N}]+[\r\n/]*` +
	`|\s*[\r\n]+` +
	`|\s+(?!\S)` +
	`|\s+`

// nextO200k returns the end of the o200k_base piece that starts at s[i].
func (p splitter) nextO200k(s string, i int) int {
	if e := asciiWordO200k(p, s, i); e >= 0 {
		return e
	}
	f0, n0 := p.at(s, i)
	prefix := f0&(cL|cN|cNL) == 0 // s[i] can be the optional P

	// P?U*W+C?, then P?U+W*C?: each first with s[i] as the prefix, then without.
	e := -1
	if prefix {
		e = p.upperLower(s, i+n0)
	}
	if e < 0 {
		e = p.upperLower(s, i)
	}
	if e < 0 && prefix {
		e = p.upperThenLower(s, i+n0)
	}
	if e < 0 {
		e = p.upperThenLower(s, i)
	}
	if e >= 0 {
		if c := contraction(s, e); c >= 0 {
			return c
		}
		return e
	}

	// \p{N}{1,3}
	if f0&cN != 0 {
		j := i + n0
		for k := 0; k < 2 && j < len(s); k++ {
			f, n := p.at(s, j)
			if f&cN == 0 {
				break
			}
			j += n
		}
		return j
	}

	// ?[^\s\p{L}\p{N}]+[\r\n/]*
	j := -1
	if f0&(cS|cL|cN) == 0 {
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if f1, _ := p.at(s, i+1); f1&(cS|cL|cN) == 0 {
			j = i + 1
		}
	}
	if j >= 0 {
		j = p.runNot(s, j, cS|cL|cN)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}

	// s[i] is a space rune: \s*[\r\n]+|\s+(?!\S)|\s+
	return p.whitespace(s, i)
}

// asciiWordO200k is nextO200k of a piece of ASCII letters, maybe after one P (a space,
// a mark), which is most pieces of most text; -1 when s[i] starts no such piece or the
// letters run into a rune past ASCII, which the general match below handles.
//
// In ASCII, U is A-Z and W is a-z (no rune is in both), and a letter cannot be the
// optional P. So P?U*W+ takes the capitals and then the small letters when there are
// some, and P?U+W* the capitals alone when there are none: either way the run of
// capitals, then the run of small letters, then a contraction.
func asciiWordO200k(p splitter, s string, i int) int {
	j := i
	if c := s[i]; c >= 0x80 {
		return -1
	} else if p.tab[c]&cL == 0 {
		// P: anything but \r, \n, a letter or a digit, followed by a letter.
		if p.tab[c]&(cN|cNL) != 0 || i+1 >= len(s) || s[i+1] >= 0x80 || p.tab[s[i+1]]&cL == 0 {
			return -1
		}
		j = i + 1
	}
	for j < len(s) && s[j]-'A' < 26 {
		j++
	}
	for j < len(s) && s[j]-'a' < 26 {
		j++
	}
	if j < len(s) && s[j] >= 0x80 {
		return -1 // a capital or small letter past ASCII may go on with the run
	}
	if c := contraction(s, j); c >= 0 {
		return c
	}
	return j
}

// upperLower matches U*W+ at i and returns its end, or -1.
//
// U* first takes the whole U run [i, q). If the rune at q is in W (so it is Ll) W+ takes
// the W run from there. Otherwise U* gives runes back until W+ can start, which is at the
// last "both" rune of the U run; W+ then stops after that one rune, since the U runes
// after it are Lu or Lt.
func (p splitter) upperLower(s string, i int) int {
	lastBoth := -1
	q := i
	for q < len(s) {
		f, n := p.tab[s[q]&0x7F], 1
		if s[q] >= 0x80 {
			f, n = p.atMulti(s, q)
		}
		if f&cU == 0 {
			if f&cW != 0 {
				return p.run(s, q+n, cW)
			}
			break
		}
		q += n
		if f&cW != 0 {
			lastBoth = q
		}
	}
	return lastBoth
}

// upperThenLower matches U+W* at i and returns its end, or -1.
func (p splitter) upperThenLower(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	if f, _ := p.at(s, i); f&cU == 0 {
		return -1
	}
	return p.run(s, p.run(s, i, cU), cW)
}
