package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/tidwall/gjson"
)

// CountTokens posts a ready count_tokens body (model, messages, and system, tools,
// tool_choice as the request has them) to the Anthropic backend and returns the
// input_tokens it answers: the figure Anthropic bills, which no local tokenizer gives for
// a Claude model. Retries, redirects and error messages are Complete's.
func (c *Client) CountTokens(ctx context.Context, body []byte) (int, error) {
	if err := c.canCount(body); err != nil {
		return 0, err
	}
	var n int
	err := c.post(ctx, c.base()+"/v1/messages/count_tokens", c.anthropicHeaders(), body, func(data []byte) error {
		v := gjson.GetBytes(data, "input_tokens")
		k, err := strconv.Atoi(v.Raw)
		if v.Type != gjson.Number || err != nil || k < 0 {
			return errors.New("the answer has no input_tokens count")
		}
		n = k
		return nil
	})
	return n, err
}

// canCount refuses what would only earn an error from the server, before any request
// (and before a cache could answer for a backend that has no such endpoint).
func (c *Client) canCount(body []byte) error {
	switch {
	case c.Backend != Anthropic:
		return fmt.Errorf("count_tokens is an Anthropic endpoint; the %s backend has none", c.Backend)
	case c.APIKey == "":
		return errors.New("count_tokens needs an Anthropic API key")
	case !gjson.ValidBytes(body):
		return errors.New("the count_tokens body is not JSON")
	}
	return c.checkBase()
}

// CountTokensCached is CountTokens asking the server once per document: the count is
// kept in cache (nil keeps none), and cached says it came from there.
func (c *Client) CountTokensCached(ctx context.Context, body []byte, cache *CountCache) (n int, cached bool, err error) {
	if err := c.canCount(body); err != nil {
		return 0, false, err
	}
	key := c.countKey(body)
	if n, ok := cache.get(key); ok {
		return n, true, nil
	}
	if n, err = c.CountTokens(ctx, body); err != nil {
		return 0, false, err
	}
	cache.put(key, n)
	return n, false, nil
}

// countKey names a count: the same body sent to another server (a proxy, another API
// version) may be counted otherwise, so both are in it. The key is not in it.
func (c *Client) countKey(body []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", anthropicVersion, c.base())
	h.Write(body)
	return [32]byte(h.Sum(nil))
}

// CountCacheDir is the CountCache's folder in ctxkit's cache directory.
const CountCacheDir = "api-counts"

// CountCache keeps count_tokens answers, one small file per document, so a document
// measured again (by the next tier of a pipeline, or the next run) costs no request. Its
// files are written by safefile's rules; a cache whose folder is a link, another user's or
// writable by others is ignored with one warning (Warn), and an entry that is not exactly
// what put writes is ignored and counted again. It only saves requests: nothing fails
// because of it.
type CountCache struct {
	root, dir string
	// Warn, if set, is told (once) why the cache or an entry of it is not used.
	Warn func(msg string)

	mu                      sync.Mutex
	checked, usable, warned bool
}

// NewCountCache returns the cache in the CountCacheDir folder of ctxkit's cache directory
// root, or nil (no cache) when root is "".
func NewCountCache(root string) *CountCache {
	if root == "" {
		return nil
	}
	return &CountCache{root: root, dir: filepath.Join(root, CountCacheDir)}
}

// ready makes and checks the folders once: the root first, so that a root that is a link
// gets nothing made behind it.
func (cc *CountCache) ready() bool {
	if cc == nil {
		return false
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.checked {
		cc.checked = true
		var err error
		for _, dir := range []string{cc.root, cc.dir} {
			if err = safefile.MkdirAll(dir); err == nil {
				err = safefile.CheckPrivateDir(dir)
			}
			if err != nil {
				break
			}
		}
		cc.usable = err == nil
		cc.warnLocked(err)
	}
	return cc.usable
}

func (cc *CountCache) path(key [32]byte) string {
	return filepath.Join(cc.dir, hex.EncodeToString(key[:])+".json")
}

// entry is an entry file's whole content. The key is repeated in it so that a file
// copied or renamed onto another entry's name does not read back as that entry's.
func entry(key [32]byte, n int) []byte {
	return fmt.Appendf(nil, "{\"key\":%q,\"input_tokens\":%d}\n", hex.EncodeToString(key[:]), n)
}

func (cc *CountCache) get(key [32]byte) (int, bool) {
	if !cc.ready() {
		return 0, false
	}
	f, err := safefile.Open(cc.path(key))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			cc.warn(err)
		}
		return 0, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 256))
	f.Close()
	n, perr := strconv.Atoi(gjson.GetBytes(data, "input_tokens").Raw)
	if err != nil || perr != nil || n < 0 || string(data) != string(entry(key, n)) {
		return 0, false // damaged or not ours: counted again and replaced
	}
	return n, true
}

func (cc *CountCache) put(key [32]byte, n int) {
	if cc.ready() {
		cc.warn(safefile.WriteFile(cc.path(key), entry(key, n)))
	}
}

func (cc *CountCache) warn(err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.warnLocked(err)
}

func (cc *CountCache) warnLocked(err error) {
	if err != nil && !cc.warned && cc.Warn != nil {
		cc.warned = true
		cc.Warn(fmt.Sprintf("API count cache not used: %v", err))
	}
}
