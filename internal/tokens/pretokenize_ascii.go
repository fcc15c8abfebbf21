package tokens

// The split patterns decide most pieces of real text from ASCII bytes alone: a word, a
// word after a space or a punctuation mark, one to three digits, a run of punctuation, a
// run of white space. nextASCII splits those from a table of the 128 ASCII bytes, in one
// call, where the general splitters try the alternatives of the pattern one after another
// (five calls and as many scans for a punctuation mark), and leaves the rest to them: it
// gives up (-1) whenever a byte past ASCII could change where the piece ends, which is
// wherever one follows the bytes it has read (a letter, a digit, a mark or a space of
// another script may go on with any of these runs).
//
// Designs tried in place of nextASCII and the memo behind it, and measured slower on the
// bench machine (2 shared cores; -cpu 1, CPU time, the old and new builds alternated;
// speeds as a fraction of this design's): classifying the eight bytes at each piece's
// start into a mask per class (SWAR) and taking the piece's end from the masks, without
// a loop or the two-byte dispatch (splitting alone 0.6-0.7: the masks cost more than
// the branches they save); memoizing units of a few pieces, from a piece's start to the
// last place within 7 bytes where a piece ends whatever the context (a space after a
// byte that is no white space, a letter before a non-letter, a digit before a
// non-digit), 1.5 pieces a lookup but 60,000 distinct units in the generated texts,
// whose table waits on the outer caches (0.75-0.95 with a warm memo); a table-driven
// automaton over the bytes (its loop alone 0.75 of splitting); nextASCII and asciiWord
// written into countText's loop, without calls (0.92-1.04); a text's two halves split in
// turn, two dependency chains at once (0.75); the acts from one table of byte pairs
// (64 KB, 0.95-1.0); pieces of one and two bytes looked up in the memo (0.8). A text of
// " word" repeated splits at the same 17-18 ns a piece as real text does: what a piece
// costs is its instructions, not branches mispredicted.

import "math/bits"

// ASCII byte kinds for nextASCII.
const (
	kHigh  = iota // not ASCII: the general splitter decides
	kUpper        // A-Z
	kLower        // a-z
	kDigit        // 0-9
	kSpace        // ' '
	kNL           // \r, \n
	kBlank        // \t, \v, \f: white space that can be the prefix of a word
	kPunct        // the rest: neither letter, digit nor white space
)

// asciiKinds is the kind of each byte; every byte from 0x80 is kHigh.
var asciiKinds = func() (k [256]uint8) {
	for c := range 128 {
		switch {
		case c >= 'A' && c <= 'Z':
			k[c] = kUpper
		case c >= 'a' && c <= 'z':
			k[c] = kLower
		case c >= '0' && c <= '9':
			k[c] = kDigit
		case c == ' ':
			k[c] = kSpace
		case c == '\r' || c == '\n':
			k[c] = kNL
		case c == '\t' || c == '\v' || c == '\f':
			k[c] = kBlank
		default:
			k[c] = kPunct
		}
	}
	return k
}()

// nextASCII returns the end of the piece of s that starts at i (i < len(s)) by the
// o200k_base pattern when o200k is true and by cl100k_base's otherwise, or -1 when that
// depends on a byte past ASCII. See the patterns in pretokenize_o200k.go and
// pretokenize_cl100k.go; in ASCII, U is A-Z, W is a-z, \p{L} is both, \p{N} is 0-9, \s
// is ' ', \t, \n, \v, \f and \r, and P, the optional prefix of a word, is anything else
// but \r and \n.
//
// What to do is decided by the kinds of the first two bytes at once (asciiActs), in one
// switch: the piece's kind is a toss-up from one piece to the next, and each test that
// decides it is a branch the processor often mispredicts, so one dispatch replaces two
// or three nested ones (the first byte's kind, the second's, and again the first's).
// Splitting the texts of the 10 MB bench documents took 2-8% less CPU.
func nextASCII(s string, i int, o200k bool) int {
	n := len(s)
	if i+1 >= n {
		return nextASCIILast(s, i)
	}
	if !o200k && s[i] == '\'' {
		// cl100k's first alternative: a contraction on its own.
		if e := contraction(s, i); e >= 0 {
			return e
		}
	}
	switch asciiActs[int(asciiKinds[s[i]])<<3|int(asciiKinds[s[i+1]])] {
	case actWord:
		return asciiWord(s, i, o200k)
	case actPrefixWord:
		return asciiWord(s, i+1, o200k)
	case actPunct:
		return asciiPunct(s, i, o200k)
	case actPrefixPunct:
		return asciiPunct(s, i+1, o200k)
	case actSpaces:
		return asciiSpaces(s, i)
	case actOne:
		return i + 1
	case actDigits:
		// \p{N}{1,3}: a digit past ASCII could be the second or third. The second
		// byte is a digit or not, and is ASCII either way (actDigits).
		if c := s[i+1]; c-'0' >= 10 {
			return i + 1
		}
		if i+2 < n {
			if c := s[i+2]; c-'0' < 10 {
				return i + 3 // (a fourth digit of any script starts the next piece)
			} else if c >= 0x80 {
				return -1
			}
		}
		return i + 2
	}
	return -1
}

// nextASCIILast is nextASCII of the last byte of s (i == len(s)-1): a piece of its own,
// unless it is past ASCII.
func nextASCIILast(s string, i int) int {
	if s[i] >= 0x80 {
		return -1
	}
	return i + 1
}

// What nextASCII does, by the kinds of the first two bytes of the piece.
const (
	actGeneral     = iota // a byte past ASCII decides: -1
	actWord               // a word from the first byte
	actPrefixWord         // the first byte is P, the word's letters start at the second
	actPunct              // a run of punctuation from the first byte
	actPrefixPunct        // a space or mark, then a run of punctuation from the second byte
	actSpaces             // white space (pretokenize.go's whitespace)
	actOne                // the first byte alone
	actDigits             // one to three digits
)

// asciiActs is the act of each pair of kinds, first<<3 | second.
var asciiActs = func() (a [64]uint8) {
	for k := range 8 {
		for k1 := range 8 {
			a[k<<3|k1] = asciiAct(uint8(k), uint8(k1))
		}
	}
	return a
}()

// asciiAct is the act for a piece whose first two bytes are of kinds k and k1.
func asciiAct(k, k1 uint8) uint8 {
	switch k {
	case kHigh:
		return actGeneral
	case kUpper, kLower:
		return actWord
	case kDigit:
		if k1 == kHigh {
			return actGeneral // a digit past ASCII could be the second
		}
		return actDigits
	case kNL:
		return actSpaces
	}
	// A space, blank or punctuation mark: the prefix of a word when a letter follows.
	switch k1 {
	case kHigh:
		return actGeneral
	case kUpper, kLower:
		return actPrefixWord
	case kPunct:
		if k == kBlank {
			return actSpaces // only ' ' can lead a run of punctuation
		}
		return actPrefixPunct // (a mark before a mark: the run from either)
	}
	// k1 is a digit or white space.
	switch {
	case k == kPunct:
		return actPunct
	case k1 == kDigit:
		return actOne // a lone space or blank before a digit
	}
	return actSpaces
}

// asciiWord returns the end of the word whose letters start at s[i] (a letter), or -1.
// In o200k, P?U*W+ and P?U+W* both take the capitals and then the small letters (no
// ASCII letter is both), and a contraction may follow; in cl100k, \p{L}+ takes every
// letter, and a contraction is a piece of its own.
func asciiWord(s string, i int, o200k bool) int {
	j := i
	n := len(s)
	if i+8 <= n {
		// The word's first eight bytes at once, which hold most words whole: a word
		// that ends in them ends here, one that goes on is followed by asciiRun.
		const ones, high = 0x0101010101010101, 0x8080808080808080
		w := le64(s[i:])
		x := w &^ high
		lower := (x + (0x80-'a')*ones) &^ (x + (0x7f-'z')*ones) &^ w & high
		if o200k {
			upper := (x + (0x80-'A')*ones) &^ (x + (0x7f-'Z')*ones) &^ w & high
			// The high bit of the first byte that is no capital (64 when all eight
			// are), and of the first from there that is no small letter.
			caps := uint(bits.TrailingZeros64(^upper & high))
			if rest := ^lower & high & (^uint64(0) << caps); rest != 0 {
				j = i + bits.TrailingZeros64(rest)>>3
			} else if caps == 64 {
				j = asciiRun(s, asciiRun(s, i+8, 'A', 0), 'a', 0)
			} else {
				j = asciiRun(s, i+8, 'a', 0)
			}
		} else {
			letter := lower | (x+(0x80-'A')*ones)&^(x+(0x7f-'Z')*ones)&^w&high
			if letter != high {
				j = i + bits.TrailingZeros64(^letter&high)>>3
			} else {
				j = asciiRun(s, i+8, 'a', 0x20)
			}
		}
	} else if o200k {
		j = asciiRun(s, asciiRun(s, j, 'A', 0), 'a', 0)
	} else {
		j = asciiRun(s, j, 'a', 0x20)
	}
	if j < n {
		if s[j] >= 0x80 {
			return -1 // a letter or mark past ASCII may go on with the word
		}
		if o200k && s[j] == '\'' {
			if e := contraction(s, j); e >= 0 {
				return e
			}
		}
	}
	return j
}

// asciiPunct returns the end of ?[^\s\p{L}\p{N}]+ and the newlines (o200k: and slashes)
// after it, the run starting at s[i], or -1.
func asciiPunct(s string, i int, o200k bool) int {
	j := i + 1
	n := len(s)
	for j < n && asciiKinds[s[j]] == kPunct {
		j++
	}
	if j < n && s[j] >= 0x80 {
		return -1 // a symbol past ASCII would go on with the run
	}
	for j < n && (s[j] == '\r' || s[j] == '\n' || o200k && s[j] == '/') {
		j++
	}
	return j
}

// asciiSpaces is whitespace (pretokenize.go) for a run of ASCII white space at s[i], or
// -1 when a byte past ASCII follows the run (U+0085, U+00A0 and others are white space).
func asciiSpaces(s string, i int) int {
	lastNL := -1
	j := i
	n := len(s)
	for ; j < n; j++ {
		k := asciiKinds[s[j]]
		if k == kNL {
			lastNL = j
		} else if k != kSpace && k != kBlank {
			break
		}
	}
	switch {
	case j < n && s[j] >= 0x80:
		return -1
	case lastNL >= 0:
		return lastNL + 1
	case j == n:
		return j
	case j-1 > i:
		return j - 1
	}
	return j
}

// asciiRun returns the end of the run of bytes from s[i] that are letters of 26 from
// first once or'ed with fold (0x20 folds capitals onto small letters), eight bytes at a
// time: a word's end costs one branch the processor cannot foresee, not one a letter.
func asciiRun(s string, i int, first, fold byte) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(s) {
		w := le64(s[i:])
		x := (w | uint64(fold)*ones) &^ high
		// The high bit of each byte of ge is set where x >= first, of gt where
		// x > first+25; neither sum carries into the next byte (x < 0x80).
		ge := x + (0x80-uint64(first))*ones
		gt := x + (0x7f-uint64(first)-25)*ones
		in := ge &^ gt &^ w & high // and not past ASCII
		if in != high {
			return i + bits.TrailingZeros64(^in&high)>>3
		}
		i += 8
	}
	for i < len(s) && (s[i]|fold)-first < 26 {
		i++
	}
	return i
}
