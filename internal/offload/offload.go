// Package offload owns what ctx-persist and ctx-snip share to keep text out of a
// conversation and in the store (internal/store) so that it comes back byte for byte: the
// files a plan stores (Blob), how a JSON string is spelled again exactly (Encode: one
// canonical spelling, or the original literal kept beside the text), how a reference names
// a stored file (Path, HashOfPath, ShellQuote), and writing the files durably before a
// document that names them is emitted (Saver).
//
// The tiers plan without I/O and give their blobs to a Saver from their command-line
// adapters; a document that names a file is written only after Saver.Finish has returned
// without error.
package offload

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Blob is one stored text a plan's edits refer to: it must be in the store before they are
// emitted.
type Blob struct {
	Hash string // store.Hash of Data
	Data string // the text as the model reads it
	// RawHash and RawData, when set, are the original JSON of what was replaced (a string
	// literal, or a list of parts), stored as a second file because re-encoding Data would
	// not give its bytes back.
	RawHash, RawData string
	// Meta describes the text for its index line; Source and Time are the Saver's.
	Meta store.Entry
	// Release, when set, is called once a Saver that was given the blob no longer reads
	// Data and RawData (written and counted), or at once when it writes neither: a
	// caller that made them in a buffer of its own takes it back then (ctx-snip decodes
	// each text it keeps into one, not into a new string the size of the text).
	Release func()
}

// Text returns the blob that keeps text. raw, when not "", is the original JSON that
// re-encoding text would not give back: it is stored too.
func Text(text, raw string) Blob {
	b := Blob{Hash: store.HashString(text), Data: text}
	if raw != "" {
		b.RawHash, b.RawData = store.HashString(raw), raw
	}
	b.Meta = store.Entry{Hash: b.Hash, Bytes: len(text), Lines: LineCount(text), Raw: b.RawHash}
	return b
}

// Encode writes s as a JSON string literal in transcript.Quote's spelling, which is fixed
// so that a text stored today is re-encoded the same way by any later version. ok is false
// when s is not valid UTF-8, which no literal spells canonically.
func Encode(s string) (lit string, ok bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	return transcript.Quote(s), true
}

// Spelled reports whether lit is what Encode makes of s (ok and equal), without making it.
func Spelled(s, lit string) bool {
	return utf8.ValidString(s) && transcript.Quoted(s, lit)
}

// DecodeSpelled is the text lit, a JSON string literal, stands for, decoded into scratch
// when it must be (grown, to be reused: transcript.DecodeQuotedInto), and whether lit is
// what Encode makes of that text (Spelled), found in the same pass over lit.
func DecodeSpelled(scratch []byte, lit string) (text string, grown []byte, spelled bool) {
	return transcript.DecodeQuotedInto(scratch, lit)
}

// LineCount is the number of lines of text, the last one counted without a final line
// break.
func LineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// RecallNote is what a reference that names a stored file says after its path (DESIGN
// §4.9): that ctx-recall reads the file too, or the part of it the model needs, given the
// path. ctx-persist's and ctx-summarize --offload's say it (their texts are files of their
// own: store.LooseBatch, Store.Put); ctx-snip's placeholders, whose texts may be packed,
// name ctx-recall --read instead, and read it in older placeholders. Parsers of older
// references take it as optional.
const RecallNote = " (or ctx-recall --outline/--read with that path)"

// ShellQuote quotes a path for a POSIX shell when it holds anything but safe characters.
func ShellQuote(p string) string {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/._-+:@%=,~", c) >= 0) {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return p
}

// ShellUnquote undoes ShellQuote.
func ShellUnquote(p string) string {
	if len(p) >= 2 && p[0] == '\'' && p[len(p)-1] == '\'' {
		return strings.ReplaceAll(p[1:len(p)-1], `'\''`, "'")
	}
	return p
}

// ErrNotStored: a path in a reference does not name a stored file.
var ErrNotStored = errors.New("does not name a stored file (…/ab/ab…, a 64-digit SHA-256)")

// HashOfPath returns the hash a path in a reference names: the end of the path
// (…/ab/abcdef…, 64 hex digits); nothing else of the path is used, since --restore reads
// the store it is given.
func HashOfPath(path string) (string, error) {
	h := path[max(0, len(path)-64):]
	rest := path[:len(path)-len(h)]
	if !store.ValidHash(h) || len(rest) < 4 || !isSep(rest[len(rest)-1]) || rest[len(rest)-3:len(rest)-1] != h[:2] || !isSep(rest[len(rest)-4]) {
		return "", fmt.Errorf("%q %w", human.Clip(path, 160), ErrNotStored)
	}
	return h, nil
}

func isSep(c byte) bool { return c == '/' || c == '\\' }

// CheckDir refuses a store directory a reference cannot name.
func CheckDir(dir string) error {
	if strings.TrimSpace(dir) == "" {
		return errors.New("empty directory name")
	}
	if strings.ContainsAny(dir, "\n\r") {
		return errors.New("a directory name with a line break cannot be written in a reference")
	}
	return nil
}
