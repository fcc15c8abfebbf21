package recall

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/store"
)

// minPrefix is the fewest hex digits a shortened reference may have.
const minPrefix = 6

// shortRef is how ctx-recall's output names an item: the first 12 hex digits of its hash.
func shortRef(h string) string { return h[:12] }

// storeOfPath is the store directory a stored file's path names (…/DIR/ab/abcdef…), or ""
// when ref is not such a path.
func storeOfPath(ref string) string {
	ref = offload.ShellUnquote(strings.TrimSpace(ref))
	if _, err := offload.HashOfPath(ref); err != nil {
		return ""
	}
	return filepath.Dir(filepath.Dir(ref))
}

// errRef is wrapped by every error about a REF that names no stored item.
var errRef = errors.New("names no stored item")

// resolve returns the hash REF names: a path that ends in …/ab/<hash> (as placeholders
// write it, shell-quoted or not), "sha256:<hash>", a hash, or its first digits when they
// name one stored file alone.
func resolve(s *store.Store, ref string) (string, error) {
	raw := ref
	ref = offload.ShellUnquote(strings.TrimSpace(ref))
	ref = strings.TrimPrefix(ref, "sha256:")
	if h, err := offload.HashOfPath(ref); err == nil {
		return h, nil
	}
	low := strings.ToLower(ref)
	if store.ValidHash(low) {
		return low, nil
	}
	if len(low) < minPrefix || len(low) > 64 || strings.Trim(low, "0123456789abcdef") != "" {
		return "", cli.WithHint(cli.Usagef("%q %v: a REF is a stored file's path, its SHA-256 or at least its first %d hex digits", human.Clip(raw, 100), errRef, minPrefix),
			"the placeholder or a search result names it: ctx-recall WORDS lists them")
	}
	found, err := s.Hashes(low) // files of their own and packed texts, sorted
	if err != nil {
		return "", cli.RuntimeError(err)
	}
	switch len(found) {
	case 0:
		return "", cli.WithHint(cli.RuntimeError(fmt.Errorf("%q %w in %s", human.Clip(raw, 100), errRef, s.Dir())),
			"is it another store? name it with --store DIR")
	case 1:
		return found[0], nil
	}
	return "", cli.Usagef("%q names %d stored items (%s, %s...): give more digits", raw, len(found), shortRef(found[0]), shortRef(found[1]))
}

// entryOf is the index line of the stored file h (as the text of an item, or as the
// original encoding of one), the newest when there are several; ok is false when the
// index has none.
func entryOf(s *store.Store, h string) (e store.Entry, ok bool, err error) {
	entries, _, err := s.Index()
	if err != nil {
		return store.Entry{}, false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Hash == h || entries[i].Raw == h {
			return entries[i], true, nil
		}
	}
	return store.Entry{}, false, nil
}

// get reads the stored file h, saying which REF named it when it cannot.
func get(s *store.Store, h string) ([]byte, error) {
	data, err := s.Get(h)
	if err != nil {
		e := cli.RuntimeError(fmt.Errorf("read %s: %w", shortRef(h), err))
		if errors.Is(err, store.ErrNotFound) {
			return nil, cli.WithHint(e, "is it another store? name it with --store DIR")
		}
		return nil, e
	}
	return data, nil
}
