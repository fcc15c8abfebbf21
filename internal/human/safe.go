package human

import (
	"strings"
	"unicode/utf8"
)

// Text that came from a transcript, a file name or a peer (a server, another process) is
// shown on a terminal only through Safe or SafeLabel (DESIGN §6). A web page or a file the
// agent read can carry escape sequences: a terminal would set its title (OSC 0), write the
// clipboard (OSC 52), clear the screen, draw a link (OSC 8) or reorder what follows
// (bidirectional overrides). Each such character is shown as an escape instead, in Go's
// spelling, so that it is seen and does nothing. JSON output is not passed through it:
// encoding/json escapes control characters itself, and a program reads the value as sent.

// Safe is s for one line of a terminal: every control character (C0, DEL and C1, newline,
// carriage return and tab too), every bidirectional embedding, override and isolate
// (U+202A-U+202E, U+2066-U+2069) and every byte that is not UTF-8 shown as an escape:
// "\x1b", "\n", "\u009b", "\u202e", "\xff". Backslashes are left as they are (Windows
// paths): the result is for reading, not for reading back.
func Safe(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(piece(s[i:i+size], r))
		i += size
	}
	return b.String()
}

// SafeLabel is Label made Safe: s on one line (runs of white space one space), its
// controls escaped, at most n characters of the escaped text, the last an ellipsis when it
// was cut (never in the middle of an escape).
func SafeLabel(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if safe(s) {
		return Label(s, n)
	}
	var b strings.Builder
	width, cut := 0, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		p := piece(s[i:i+size], r)
		w := utf8.RuneCountInString(p)
		if width+w > n-1 && !fits(s[i:], n-width) {
			cut = true
			break
		}
		b.WriteString(p)
		width += w
		i += size
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// fits says whether the rest of a label, escaped, takes at most room characters.
func fits(rest string, room int) bool {
	return utf8.RuneCountInString(Safe(rest)) <= room
}

// safe says whether s has nothing Safe would escape.
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			return safeRunes(s[i:])
		}
	}
	return true
}

func safeRunes(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune says whether the rune r, read as size bytes, is one a terminal acts on.
func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1: // a byte that is not UTF-8
		return true
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// piece is how the rune r, read from the bytes raw, is shown.
func piece(raw string, r rune) string {
	if !unsafeRune(r, len(raw)) {
		return raw
	}
	const hex = "0123456789abcdef"
	switch {
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r == utf8.RuneError && len(raw) == 1:
		return `\x` + string([]byte{hex[raw[0]>>4], hex[raw[0]&15]})
	case r < 0x80:
		return `\x` + string([]byte{hex[r>>4], hex[r&15]})
	}
	return `\u` + string([]byte{hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15]})
}
