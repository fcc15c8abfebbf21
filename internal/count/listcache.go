package count

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/sessions"
)

// A listing measures every session it shows, and sessions run to tens of MB: about a
// second each. Most of them have not changed since the last listing, so their figures are
// kept in ctxkit's cache directory, keyed by the file's path, size and modification time
// and by the measuring flags the user set; a second listing measures only what changed.
// The figures are shown, never acted on (no --fail-over here), and a cache that cannot be
// read or written only costs the time of measuring again.

// listCacheName is the file in the cache directory; the version names its layout.
const listCacheName = "sessions-v2.json"

// listCacheMax bounds the entries kept: those of this listing first.
const listCacheMax = 2000

// listFigures are the measured figures of one session.
type listFigures struct {
	Tokens      int     `json:"tokens"`
	Window      int     `json:"effective_window"`
	Utilization float64 `json:"utilization"`
	// the session's figures (SessionFigures): the main log's, and with its subagents
	Requests     int `json:"requests"`
	PromptTokens int `json:"prompt_tokens"`
	Subagents    int `json:"subagents"`
	RequestsWith int `json:"requests_with_subagents"`
	PromptWith   int `json:"prompt_tokens_with_subagents"`
}

// listCache is the figures of sessions measured before.
type listCache struct {
	path     string // "" when there is no cache directory
	settings string
	entries  map[string]listFigures
	dirty    bool
	stamps   map[string]string // subagentStamp by session path, read once a listing
}

// openListCache reads the cache (an unreadable one is an empty one).
func openListCache(ctx *cli.Context) *listCache {
	c := &listCache{entries: map[string]listFigures{}}
	dir := ctx.CacheDir()
	if dir == "" {
		return c
	}
	c.path = filepath.Join(dir, listCacheName)
	env := ctx.CommonEnv()
	keys := make([]string, 0, len(env))
	for k, v := range env {
		keys = append(keys, k+"="+v)
	}
	// --sidechains changes what is counted too, and has no variable.
	keys = append(keys, fmt.Sprintf("sidechains=%v", ctx.Common.Sidechains))
	slices.Sort(keys)
	c.settings = strings.Join(keys, "\x00")
	if f, err := safefile.Open(c.path); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, 16<<20))
		f.Close()
		json.Unmarshal(b, &c.entries) // a damaged file is an empty cache
	}
	return c
}

// key names a session as it is now, its subagents' logs too, measured with this run's
// flags.
func (c *listCache) key(s sessions.Session) string {
	sub, ok := c.stamps[s.Path]
	if !ok && s.Agent == sessions.ClaudeCode {
		if c.stamps == nil {
			c.stamps = map[string]string{}
		}
		sub = subagentStamp(s.Path)
		c.stamps[s.Path] = sub
	}
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%s", s.Path, s.Size, s.Mod.UnixNano(), sub, c.settings)
}

func (c *listCache) get(s sessions.Session) (listFigures, bool) {
	v, ok := c.entries[c.key(s)]
	return v, ok
}

func (c *listCache) put(s sessions.Session, v listFigures) {
	c.entries[c.key(s)] = v
	c.dirty = true
}

// save writes the cache when it changed, keeping the entries of found (this listing) and,
// within the bound, others.
func (c *listCache) save(found []sessions.Session) {
	if c.path == "" || !c.dirty {
		return
	}
	if len(c.entries) > listCacheMax {
		kept := map[string]listFigures{}
		for _, s := range found {
			if v, ok := c.get(s); ok {
				kept[c.key(s)] = v
			}
		}
		c.entries = kept
	}
	b, err := json.Marshal(c.entries)
	if err != nil {
		return
	}
	if safefile.MkdirAll(filepath.Dir(c.path)) == nil {
		safefile.WriteFile(c.path, b)
	}
}
