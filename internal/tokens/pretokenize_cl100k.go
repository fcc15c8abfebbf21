package tokens

// cl100kPattern is cl100k_base's split regex, for reference (see pretokenize.go):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// nextCl100k returns the end of the cl100k_base piece that starts at s[i].
func (p splitter) nextCl100k(s string, i int) int {
	f0, n0 := p.at(s, i)

	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if e := contraction(s, i); e >= 0 {
			return e
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+ : a letter run, with one rune before it that is not a
	// letter, digit, \r or \n (the optional prefix can never be a letter, so when s[i] is
	// a letter the run starts at i).
	if f0&cL != 0 {
		return p.run(s, i+n0, cL)
	}
	if f0&(cN|cNL) == 0 && i+n0 < len(s) {
		if f1, n1 := p.at(s, i+n0); f1&cL != 0 {
			return p.run(s, i+n0+n1, cL)
		}
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

	// ?[^\s\p{L}\p{N}]+[\r\n]*
	j := -1
	if f0&cS == 0 { // neither letter nor digit (handled above) nor space
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if f1, _ := p.at(s, i+1); f1&(cS|cL|cN) == 0 {
			j = i + 1
		}
	}
	if j >= 0 {
		j = p.runNot(s, j, cS|cL|cN)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}

	// s[i] is a space rune: \s*[\r\n]+|\s+(?!\S)|\s+
	return p.whitespace(s, i)
}

// runNot returns the end of the run of runes from i whose class has no bit of mask.
func (p splitter) runNot(s string, i int, mask uint8) int {
	for i < len(s) {
		c := s[i]
		if c < 0x80 {
			if p.tab[c]&mask != 0 {
				return i
			}
			i++
			continue
		}
		f, n := p.atMulti(s, i)
		if f&mask != 0 {
			return i
		}
		i += n
	}
	return i
}
