package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// MaxMarkers is how many cache_control markers the Messages API accepts in one request.
const MaxMarkers = 4

// pending is what the request's log line and the conversation's totals still need once
// the body has gone out: counting is left until then so that it adds no latency.
type pending struct {
	orig, sent []byte
	// Their message arrays, orig[origAt[0]:origAt[1]] holding origMsgs and likewise
	// sent's (sentAt[0] < 0: not known).
	origAt, sentAt     [2]int
	origMsgs, sentMsgs []string
	format             transcript.Format
	model              string
	session            string // the client's session id (sent.go)
	markers            int    // the cache_control markers of sent (Anthropic)
	tools              int    // the tools sent offers
	cwd                string // the working directory the client's body names (sent.go)
}

// arrayKey is where a format keeps its messages in a request body.
func arrayKey(f transcript.Format) string {
	if f == transcript.Responses {
		return "input"
	}
	return "messages"
}

// rewrite decides what to send for one conversation request: the body as the client sent
// it when it is not a conversation, else the conversation rebuilt on what was sent last
// time and piped. It never fails: whatever goes wrong is a fallback to the original body.
func (s *Server) rewrite(r *http.Request, format transcript.Format, body []byte) (*Record, *pending) {
	rec := &Record{Time: s.now(), Path: r.URL.Path, Format: string(format), body: body, Tiers: []replay.Firing{}}
	var recent func(string) [][]string
	if s.State != nil {
		recent = s.State.Recent
	}
	sc, ok := scanBody(body, format, recent)
	if !ok {
		return rec, nil
	}
	cur, top := sc.msgs, sc.top
	key := conversationKey(r, top, format, cur)
	rec.Conversation = key

	var st *convstate.State
	if s.State != nil {
		unlock := s.State.Lock(key)
		defer unlock()
		var err error
		if st, err = s.State.Get(key); err != nil {
			// A state that cannot be trusted or read is no memory: the request goes on as a
			// conversation's first.
			rec.Warning = "state ignored: " + err.Error()
			st = nil
		}
	}
	client := &clientBody{format: format, body: body, msgs: cur, prev: s.clients.take(key)}
	defer func() {
		if t := cmp.Or(client.t, client.prev); t != nil {
			s.clients.put(key, t)
		}
	}()
	built := body
	// sentMsgs are the messages of what goes out, known without a parse until the
	// pipeline has run.
	sentMsgs := make([]string, len(cur))
	for i, m := range cur {
		sentMsgs[i] = m.Raw
	}
	// The messages received, remembered for the next request; their hashes only where
	// they are needed (convstate.State.Orig).
	origRaws := make([]string, len(cur))
	for i, m := range cur {
		origRaws[i] = m.Raw
	}
	hashes := make([]string, len(cur))
	refused := false
	var marks []int // the messages of sentMsgs that hold a marker (Anthropic), once known
	marked := false
	if st != nil && extends(st, cur, hashes) {
		raws := make([]string, 0, len(st.Sent)+len(cur)-len(st.Orig))
		raws = append(raws, st.Sent...)
		for _, m := range cur[len(st.Orig):] {
			raws = append(raws, m.Raw)
		}
		var rawMarks []int
		if format == transcript.Anthropic {
			old := st.Marks
			if !st.Marked {
				old = withMarkers(st.Sent, 0, nil)
			}
			rawMarks = withMarkers(raws, len(st.Sent), old)
			raws, rawMarks = capMarkers(top.markers, raws, rawMarks)
		}
		// The client's body itself when every message sent last is the client's again.
		rebuilt := body
		for i := range raws {
			if len(raws) != len(cur) || raws[i] != cur[i].Raw {
				rebuilt = splice(body, sc.start, sc.end, raws)
				break
			}
		}
		// The state is the proxy's own, but what it sends is held to the client's body all
		// the same: a state damaged since (a bug, a disk, another version) must not make it
		// send a request the client's would not have been.
		err := oneValueEach(st.Sent, st.Valid)
		if err == nil && !rebuiltHolds(format, body, sc, raws, len(st.Orig), st) {
			err = client.holds(rebuilt, nil)
		}
		if err != nil {
			rec.Fallback = "state: the rebuilt request " + err.Error()
			refused = true
		} else {
			built = rebuilt
			sentMsgs = raws
			marks, marked = rawMarks, true
			rec.Extended = true
		}
	}

	sent := built
	var outScan *scanned // the pipeline's output, read
	if s.Pipe != nil && !refused {
		out, fired, err := s.pipe(r, key, format, built, s.clock(st, body), client)
		if err != nil {
			rec.Fallback = err.Error()
			sent = body
			rec.Extended, marked = false, false
			sentMsgs = sentMsgs[:0]
			for _, m := range cur {
				sentMsgs = append(sentMsgs, m.Raw)
			}
		} else {
			sent, rec.Tiers = out, fired
			marked = false
			// The output read against the messages piped in: those the tiers left as they
			// were are compared, not read again.
			in := sentMsgs
			if osc, ok := scanBody(sent, format, func(string) [][]string { return [][]string{in} }); ok {
				outScan = &osc
				sentMsgs = make([]string, len(osc.msgs))
				for i, m := range osc.msgs {
					sentMsgs[i] = m.Raw
				}
			} else {
				sentMsgs = nil
				for _, m := range gjson.GetBytes(sent, arrayKey(format)).Array() {
					sentMsgs = append(sentMsgs, m.Raw)
				}
			}
		}
	}
	rec.body = sent
	rec.MessagesSent = len(sentMsgs)
	if format == transcript.Anthropic && !marked {
		marks, marked = withMarkers(sentMsgs, 0, nil), true
	}

	if st != nil {
		for i, m := range sentMsgs {
			if i >= len(st.Sent) || (m != st.Sent[i] && canonical(m) != canonical(st.Sent[i])) {
				break
			}
			rec.CachedMessages++
			rec.CachedBytes += len(m)
		}
	}
	if s.State != nil {
		next := &convstate.State{Key: key}
		if st != nil {
			*next = *st
		}
		next.Orig, next.OrigRaw = hashes, origRaws
		next.Sent = sentMsgs
		next.Marks, next.Marked = marks, marked
		// Every message sent is one JSON value: an element of the client's body or of
		// the pipeline's output, both held to be JSON.
		next.Valid = len(sentMsgs)
		s.State.Keep(next)
	}
	p := &pending{orig: body, sent: sent, format: format, model: top.model, session: sessionOf(r, top.cacheKey), tools: top.tools,
		cwd: cwdIn(top.prompt[:], cur)}
	piped := !bytes.Equal(sent, built) && !bytes.Equal(sent, body)
	p.origAt, p.origMsgs, p.sentMsgs = [2]int{sc.start, sc.end}, origRaws, sentMsgs
	// The array sent is the body's, or a splice of it that changed the array alone.
	p.sentAt = [2]int{sc.start, len(sent) - (len(body) - sc.end)}
	if piped {
		p.sentAt = [2]int{-1, -1}
		if outScan != nil {
			p.sentAt = [2]int{outScan.start, outScan.end}
			p.tools = outScan.top.tools
		} else {
			p.tools = int(gjson.GetBytes(sent, "tools.#").Int()) // the pipeline's output
		}
	}
	if format == transcript.Anthropic {
		// The markers of what goes out, from the parts already apart: the top-level fields
		// are the client's unless the pipeline ran.
		p.markers = top.markers
		if piped && outScan != nil {
			p.markers = outScan.top.markers
		} else if piped {
			p.markers = countMarkers(gjson.GetBytes(sent, "tools")) + countMarkers(gjson.GetBytes(sent, "system"))
		}
		for _, i := range marks {
			p.markers += countMarkers(gjson.Get(sentMsgs[i], "content"))
		}
	}
	return rec, p
}

// oneValueEach refuses remembered messages of which one is not exactly one JSON value:
// spliced into the message array, it would make no message there, or several. The error
// completes "the rebuilt request ...". The first checked were found so before.
func oneValueEach(sent []string, checked int) error {
	for i, m := range sent {
		if i < checked {
			continue
		}
		if !gjson.Valid(m) || strings.Trim(m, " \t\r\n") != m {
			return fmt.Errorf("would not hold the messages remembered: sent message %d is not one JSON value", i)
		}
	}
	return nil
}

// topFields are the small top-level fields of a request, read in one pass.
type topFields struct {
	system, cacheKey, user, model string
	markers                       int             // cache_control markers outside the messages
	tools                         int             // the tools it offers
	prompt                        [2]gjson.Result // system, instructions
}

// see takes in the top-level field k of value v.
func (top *topFields) see(k string, v gjson.Result) {
	switch k {
	case "system", "instructions":
		if k == "system" {
			top.prompt[0] = v
		} else {
			top.prompt[1] = v
		}
		top.system += v.Raw
		top.markers += countMarkers(v)
	case "tools":
		top.markers += countMarkers(v)
		top.tools = int(v.Get("#").Int())
	case "prompt_cache_key":
		top.cacheKey = v.String()
	case "metadata":
		top.user = v.Get("user_id").String()
	case "model":
		top.model = v.String()
	}
}

// countMarkers counts the cache_control markers of the blocks of v (tools, system).
func countMarkers(v gjson.Result) int {
	if !v.IsArray() || !hasMarker(v.Raw) {
		return 0
	}
	n := 0
	v.ForEach(func(_, b gjson.Result) bool {
		if b.Get("cache_control").Exists() {
			n++
		}
		return true
	})
	return n
}

// splice is body with its message array, body[start:end], replaced by the messages raws.
func splice(body []byte, start, end int, raws []string) []byte {
	size := len(body) - (end - start) + 2 + len(raws)
	for _, m := range raws {
		size += len(m)
	}
	out := make([]byte, 0, size)
	out = append(out, body[:start]...)
	out = append(out, '[')
	for i, m := range raws {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	out = append(out, ']')
	return append(out, body[end:]...)
}

// extends reports whether the messages cur begin with the ones st's client sent last, in
// canonical form, and gives hashes[i] the hash of each of those it knows or had to work out
// ("": not hashed yet). A message the client sends again byte for byte (all but the new
// ones, as a rule) is that message, whose hash is left as it was: a first request and the
// messages it sent as received are never hashed (convstate.State.Orig).
func extends(st *convstate.State, cur []gjson.Result, hashes []string) bool {
	if len(st.Orig) == 0 || len(st.Orig) > len(cur) {
		return false
	}
	for i, h := range st.Orig {
		raw := ""
		if i < len(st.OrigRaw) {
			raw = st.OrigRaw[i]
		}
		if raw != "" && cur[i].Raw == raw {
			hashes[i] = h
			continue
		}
		if h == "" {
			if raw == "" {
				return false // (never: a hash not worked out is of a message kept)
			}
			h = convstate.Hash(canonical(raw))
		}
		hashes[i] = convstate.Hash(canonical(cur[i].Raw))
		if hashes[i] != h {
			return false
		}
	}
	return true
}

// canonical is a message in the form that says whether a request extends the last one:
// what clients re-encode between turns without changing the prompt is taken out.
//   - cache_control markers: Claude Code moves its last marker to the newest message every
//     turn, so the message that carried it last time comes back without it; the marker
//     says where to cache, it is not part of the prompt.
//   - a content of exactly one text block, which Claude Code sends for the newest user
//     message and, one request later, sends as the plain string; the two are the same
//     prompt to the API. The block's own JSON string is kept, so the two forms meet
//     whatever the client's escaping.
func canonical(raw string) string {
	raw = unmarked(raw)
	// A first block typed otherwise is no text block alone: the message is read no
	// further (a tool call's or result's content is not walked to its end).
	if typ := gjson.Get(raw, "content.0.type"); typ.Exists() && (typ.Type != gjson.String || typ.Str != "text" && typ.Str != "input_text") {
		return raw
	}
	return folded(raw)
}

// folded is raw with a content of one text block, and nothing else in the block, as the
// block's text.
func folded(raw string) string {
	content := gjson.Get(raw, "content")
	if !content.IsArray() || strings.Count(content.Raw, `"type"`) != 1 {
		return raw
	}
	blocks := content.Array()
	if len(blocks) != 1 {
		return raw
	}
	text, plain := "", true
	blocks[0].ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "type" && (v.Str == "text" || v.Str == "input_text"):
		case k.Str == "text" && v.Type == gjson.String:
			text = v.Raw
		default:
			plain = false
		}
		return plain
	})
	if !plain || text == "" {
		return raw
	}
	if out, err := sjson.SetRaw(raw, "content", text); err == nil {
		return out
	}
	return raw
}

// unmarked is a message without the cache_control markers of its content blocks.
func unmarked(raw string) string {
	if hasMarker(raw) {
		blocks := gjson.Get(raw, "content").Array()
		for j := len(blocks) - 1; j >= 0; j-- {
			if blocks[j].Get("cache_control").Exists() {
				if out, err := sjson.Delete(raw, "content."+strconv.Itoa(j)+".cache_control"); err == nil {
					raw = out
				}
			}
		}
	}
	return raw
}

// sameReading reports whether two forms of a Messages API message read the same to
// ctxkit (transcript.Parse gives the same message, so ctx-repair finds the same problems
// and malformed the same fault), which the proxy relies on to send one for the other
// without reading the request whole: they differ in cache_control markers alone, which
// no ctxkit reading looks at, or also in a content of one text block against its text as
// a string (both read as one text block), the text not empty.
func sameReading(a, b string) bool {
	if a == b {
		return true
	}
	a, b = unmarked(a), unmarked(b)
	if a == b {
		return true
	}
	if canonical(a) != canonical(b) {
		return false
	}
	for _, m := range []string{a, b} {
		if c := gjson.Get(m, "content"); c.IsArray() && (c.Get("0.type").Str != "text" || c.Get("0.text").Raw == `""`) {
			return false
		}
	}
	return true
}

// rebuiltHolds reports whether the rebuilt request, raws in the client's body in place of
// its messages, may be sent without reading it whole (clientBody.holds): each of raws is
// the client's message at its place or reads the same (sameReading), every message of raws
// before the client's new ones (from) was read in the conversation's last count (so it
// reads as a message of the format: transcript.Parse checks each message alone), and the
// client's body with its new messages alone reads. Then the rebuilt request reads as the
// client's does, message for message: as well formed, and with the same ctx-repair
// problems. Only the Messages API's bodies are taken so.
func rebuiltHolds(format transcript.Format, body []byte, sc scanned, raws []string, from int, st *convstate.State) bool {
	if format != transcript.Anthropic || st.Out == nil || convstate.CommonPrefix(st.Sent, st.Out.Raws) < from {
		return false
	}
	for i := 0; i < from; i++ {
		if !sameReading(raws[i], sc.msgs[i].Raw) || raws[i] != st.Sent[i] && !sameReading(raws[i], st.Sent[i]) {
			return false
		}
	}
	news := make([]string, 0, len(sc.msgs)-from)
	for _, m := range sc.msgs[from:] {
		news = append(news, m.Raw)
	}
	_, err := transcript.Parse(splice(body, sc.start, sc.end, news), transcript.Options{Format: format})
	return err == nil
}

// conversationKey names the conversation a request belongs to: the client's session id
// when it sends one, with the first message (a client's side requests in the same session,
// a title or a summary, start otherwise and must not take the main thread's place); else
// the system prompt and the first message.
func conversationKey(r *http.Request, top topFields, format transcript.Format, cur []gjson.Result) string {
	// The first message in its canonical form: in a session's first request it is also
	// the newest, and carries the marker and the block form it loses in the next.
	first := ""
	if len(cur) > 0 {
		first = canonical(cur[0].Raw)
	}
	id := r.Header.Get("X-Claude-Code-Session-Id")
	for _, alt := range []string{r.Header.Get("Session-Id"), top.cacheKey, top.user} {
		if id == "" {
			id = alt
		}
	}
	if id != "" {
		return string(format) + ":" + convstate.Hash(id)[:12] + ":" + convstate.Hash(first)[:8]
	}
	return string(format) + ":" + convstate.Hash(top.system + "\n" + first)[:20]
}

// pipe runs the pipeline on in (the client's body, or the one rebuilt on the state) and
// checks what it gives back against the client's body: a document of the same format whose
// messages are well formed and that breaks none of ctx-repair's rules the client's kept.
func (s *Server) pipe(r *http.Request, key string, format transcript.Format, in []byte, clock map[string]string, client *clientBody) ([]byte, []replay.Firing, error) {
	env := make(map[string]string, len(s.Env)+len(clock)+2)
	for k, v := range s.Env {
		env[k] = v
	}
	if s.Store != "" {
		env[store.SyncEnv] = "later" // synced in finish, after the response
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	// The tiers, as values of an in-process pipeline (when every stage is a ctxkit
	// command), made once from the server's environment; a request whose summaries the
	// upstream writes makes its own (its backend and credential are the request's).
	tiers, tiersErr := s.Pipe.Tiers(replay.StageEnv(getenv, maps.Clone(env)))
	for k, v := range clock {
		env[k] = v
	}
	timeout := s.Timeout
	if s.Summarizer != nil {
		if extra := s.Summarizer.env(r, format, s.upstreamFor(r.URL.Path)); extra != nil {
			for k, v := range extra {
				env[k] = v
			}
			if timeout > 0 {
				timeout += s.Summarizer.Timeout
			}
			if tiers != nil {
				tiers, tiersErr = s.Pipe.Stages(replay.StageEnv(getenv, env), "")
			}
		}
	}
	if tiersErr != nil {
		return nil, nil, fmt.Errorf("pipeline: %w", tiersErr)
	}
	env["CTX_FORMAT"] = string(format)
	statsPath := ""
	if s.TempDir != "" {
		f, err := os.CreateTemp(s.TempDir, "stats-*.jsonl")
		if err == nil {
			statsPath = f.Name()
			f.Close()
			env["CTX_STATS_FILE"] = statsPath
		}
	}
	ctx, cancel := withTimeout(r.Context(), timeout)
	defer cancel()
	// An in-process stage sees the deadline only between stages: the pipeline runs on its
	// own, and at the deadline the request goes on with its original body while the stage
	// finishes (its output unused, its stats file removed then).
	type result struct {
		out, stats []byte
		outT       *transcript.Transcript // out as Parse reads it under the format, when the pipeline read it so
		err        error
	}
	done := make(chan result, 1)
	go func() {
		if tiers == nil {
			out, err := s.Pipe.Run(ctx, in, getenv, env)
			done <- result{out: out, err: err}
			return
		}
		// The clock as the stages' variables say it (Server.clock), for the tiers.
		clk := pipeline.Clock{}
		clk.Now, _ = time.Parse(time.RFC3339Nano, env["CTX_NOW"])
		clk.CachedAt, _ = time.Parse(time.RFC3339Nano, env["CTX_SNIP_CACHED_AT"])
		clk.CacheTTL, _ = time.ParseDuration(env["CTX_SNIP_CACHE_TTL"])
		lookup := replay.StageEnv(getenv, env)
		reading := transcript.Options{Format: format, Path: lookup("CTX_PATH"), Sidechains: lookup("CTX_SIDECHAINS") == "true"}
		run := *tiers
		run.StatsFile = statsPath // for the stages that run as their commands
		// The conversation's last request as the pipeline sent it, when kept: what this
		// one holds of it is neither parsed nor counted again (its counts only when the
		// same tiers counted them: not under --summarizer upstream's per-request tiers).
		seed := s.docs.take(key)
		d, _, stats, err := replay.RunInProcessFrom(ctx, &run, seed, in, reading, clk, lookup)
		if run.Env.Flush != nil {
			run.Env.Flush()
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		if d != nil {
			s.docs.put(key, d)
		}
		res := result{out: d.Raw, stats: stats}
		if reading.Path == "" && !reading.Sidechains {
			res.outT = d.T
		}
		done <- res
	}()
	var res result
	select {
	case res = <-done:
		if statsPath != "" {
			defer os.Remove(statsPath)
		}
	case <-ctx.Done():
		go func() {
			<-done
			if statsPath != "" {
				os.Remove(statsPath)
			}
		}()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("pipeline: did not finish within %v", timeout)
		}
		return nil, nil, fmt.Errorf("pipeline: %w", ctx.Err())
	}
	out, err := res.out, res.err
	if err != nil {
		return nil, nil, fmt.Errorf("pipeline: %w", err)
	}
	if err := client.holds(out, res.outT); err != nil {
		return nil, nil, fmt.Errorf("pipeline output %w", err)
	}
	var fired []replay.Firing
	switch {
	case tiers != nil:
		fired, _, _ = replay.ParseStats(res.stats)
	case statsPath != "":
		if data, err := os.ReadFile(statsPath); err == nil {
			fired, _, _ = replay.ParseStats(data)
		}
	}
	if fired == nil {
		fired = []replay.Firing{}
	}
	return out, fired, nil
}

// clock is what the stages need to know of time, which an API body does not carry: now,
// when the conversation's previous request was answered (the prompt cache was last
// written then, so ctx-snip's idle rule counts from it), and the cache lifetime the
// request asks for when it is longer than the default (Anthropic's ttl of 1h).
func (s *Server) clock(st *convstate.State, body []byte) map[string]string {
	env := map[string]string{"CTX_NOW": s.now().UTC().Format(time.RFC3339Nano)}
	if st != nil && !st.Answered.IsZero() {
		env["CTX_SNIP_CACHED_AT"] = st.Answered.UTC().Format(time.RFC3339Nano)
	}
	if ttl := cacheTTL(body); ttl > 0 {
		env["CTX_SNIP_CACHE_TTL"] = ttl.String()
	}
	return env
}

// cacheTTL is the longest cache lifetime a Messages API body's cache_control markers ask
// for ("ttl": "5m" or "1h"), 0 when none names one.
func cacheTTL(body []byte) time.Duration {
	if !bytes.Contains(body, []byte(`"ttl"`)) {
		return 0
	}
	longest := time.Duration(0)
	see := func(v gjson.Result) bool {
		if d, err := time.ParseDuration(v.Get("cache_control.ttl").String()); err == nil && d > longest {
			longest = d
		}
		return true
	}
	doc := gjson.ParseBytes(body)
	doc.Get("system").ForEach(func(_, b gjson.Result) bool { return see(b) })
	doc.Get("tools").ForEach(func(_, b gjson.Result) bool { return see(b) })
	doc.Get("messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, b gjson.Result) bool { return see(b) })
		return true
	})
	return longest
}

// clientBody is the body a client sent, to which any other body the proxy would send in
// its place is held (holds). It is parsed only when needed, once: a request that goes out
// as it came costs no parse, and one whose replacement has no problem at all costs the
// parse of the replacement alone.
type clientBody struct {
	format transcript.Format
	body   []byte
	msgs   []gjson.Result // its messages

	raws   map[string]bool // its messages as sent
	odd    map[string]bool // the canonical forms of its messages that are not well formed
	parsed bool
	t      *transcript.Transcript // it parsed, once parsed
	prev   *transcript.Transcript // the conversation's last client body parsed, to read it from
	err    error                  // it does not read as format
	counts map[repair.Rule]int    // ctx-repair's problems in it, by rule
}

// wholeReads counts the bodies holds reads whole, for the tests that hold a turn to reading
// only what is new.
var wholeReads atomic.Int64

// holds returns nil when out may be sent instead of the client's body: out is that body,
// or it is JSON that reads as the format, every message of it is well formed (or is one of
// the client's own), and it breaks no rule of ctx-repair --check more often than the
// client's body does (a problem the client sent is not the proxy's to fix, but it must add
// none). The error completes "the rebuilt request ..." or "pipeline output ...".
//
// outT, when not nil, is out as transcript.Parse reads it under the format (the pipeline's
// parse of its output), which then is not read again; Parse accepts only valid JSON.
func (c *clientBody) holds(out []byte, outT *transcript.Transcript) error {
	if bytes.Equal(out, c.body) {
		return nil
	}
	wholeReads.Add(1)
	if outT == nil && !gjson.ValidBytes(out) {
		return errors.New("is not JSON")
	}
	if c.raws == nil {
		c.raws = make(map[string]bool, len(c.msgs))
		for _, m := range c.msgs {
			c.raws[m.Raw] = true
		}
	}
	arr := gjson.GetBytes(out, arrayKey(c.format))
	if !arr.IsArray() {
		return fmt.Errorf("has no %q array", arrayKey(c.format))
	}
	i := 0
	var bad error
	arr.ForEach(func(_, m gjson.Result) bool {
		// A message as the client sent it is the client's word, well formed or not; the
		// others (the state's, the tiers') are looked at.
		if !c.raws[m.Raw] {
			if why := malformed(c.format, m); why != "" && !c.isOdd(m.Raw) {
				bad = fmt.Errorf("is not a valid request: %s.%d %s", arrayKey(c.format), i, why)
				return false
			}
		}
		i++
		return true
	})
	if bad != nil {
		return bad
	}
	t := outT
	if t == nil || t.Format != c.format {
		var err error
		if t, err = transcript.Parse(out, transcript.Options{Format: c.format}); err != nil {
			return fmt.Errorf("does not read as %s: %v", c.format, err)
		}
	}
	now := repair.Counts(repair.Check(t))
	if len(now) == 0 {
		return nil // no problem at all: none the client's body kept is broken
	}
	c.parse()
	if c.err != nil {
		return fmt.Errorf("fails ctx-repair --check (%s), and the client's body does not read as %s: %v", firstRule(now), c.format, c.err)
	}
	for _, rule := range repair.Rules {
		if now[rule] > c.counts[rule] {
			return fmt.Errorf("fails ctx-repair --check: %s (%d, the client's body %d)", rule, now[rule], c.counts[rule])
		}
	}
	return nil
}

func (c *clientBody) parse() {
	if c.parsed {
		return
	}
	c.parsed = true
	t, err := transcript.Reparse(c.prev, c.body, transcript.Options{Format: c.format})
	if err != nil {
		c.err = err
		return
	}
	c.t, c.counts = t, repair.Counts(repair.Check(t))
}

// firstRule names the first rule, in ctx-repair's order, that counts hold a problem of.
func firstRule(counts map[repair.Rule]int) repair.Rule {
	for _, rule := range repair.Rules {
		if counts[rule] > 0 {
			return rule
		}
	}
	return ""
}

// isOdd reports whether a message that is not well formed is, in canonical form, one the
// client sent so (the proxy re-encodes only cache_control markers).
func (c *clientBody) isOdd(raw string) bool {
	if c.odd == nil {
		c.odd = map[string]bool{}
		for _, m := range c.msgs {
			if malformed(c.format, m) != "" {
				c.odd[canonical(m.Raw)] = true
			}
		}
	}
	return c.odd[canonical(raw)]
}

// malformed says what makes m not a message of the format as its API takes it, "" when
// nothing does: an object with a role the API knows, its content a string or a list of
// typed blocks (Anthropic, Chat Completions), or a typed item (Responses). ctx-repair's
// rules say whether messages fit together; this says whether each is one.
func malformed(format transcript.Format, m gjson.Result) string {
	if !m.IsObject() {
		return "is not an object"
	}
	var role, typ, content, calls gjson.Result
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "type":
			typ = v
		case "content":
			content = v
		case "tool_calls":
			calls = v
		}
		return true
	})
	hasRole := func(roles ...string) string {
		if role.Type == gjson.String {
			for _, r := range roles {
				if role.Str == r {
					return ""
				}
			}
		}
		if !role.Exists() {
			return "has no role"
		}
		return "has role " + role.Raw
	}
	blocks := func(optional bool) string {
		switch {
		case content.Type == gjson.String:
		case content.IsArray():
			bad := ""
			content.ForEach(func(_, b gjson.Result) bool {
				if !b.IsObject() || b.Get("type").Type != gjson.String {
					bad = "has a content block that is not a typed object"
				}
				return bad == ""
			})
			return bad
		case optional && (!content.Exists() || content.Type == gjson.Null):
		default:
			return "has no content (a string or a list of blocks)"
		}
		return ""
	}
	switch format {
	case transcript.Anthropic:
		if why := hasRole("user", "assistant"); why != "" {
			return why
		}
		return blocks(false)
	case transcript.OpenAI:
		if why := hasRole("system", "developer", "user", "assistant", "tool", "function"); why != "" {
			return why
		}
		if calls.Exists() && calls.Type != gjson.Null {
			if !calls.IsArray() {
				return "has tool_calls that are not a list"
			}
			bad := ""
			calls.ForEach(func(_, c gjson.Result) bool {
				if !c.IsObject() {
					bad = "has a tool call that is not an object"
				}
				return bad == ""
			})
			if bad != "" {
				return bad
			}
		}
		return blocks(true)
	case transcript.Responses:
		if typ.Exists() && typ.Type != gjson.String {
			return "has a type that is not a string"
		}
		if typ.Type != gjson.String && role.Type != gjson.String {
			return "has neither type nor role"
		}
		return blocks(true)
	}
	return ""
}

// finish counts what was received and what was sent, for the log line and the totals,
// and makes durable what the stages wrote to the store.
func (s *Server) finish(rec *Record, p *pending) {
	if p == nil {
		return
	}
	if s.Store != "" && len(rec.Tiers) > 0 {
		if err := store.SyncSince(s.Store, rec.Time); err != nil {
			rec.Warning = strings.TrimPrefix(rec.Warning+"; ", "; ") + "store not synced: " + err.Error()
		}
	}
	// The counts of the conversation's last request counted give its messages' tokens.
	var in, out *convstate.Counts
	if s.State != nil && rec.Conversation != "" {
		if cur, err := s.State.Get(rec.Conversation); err == nil && cur != nil {
			in, out = cur.In, cur.Out
		}
	}
	rec.TokensIn, in = s.count(p.orig, p.format, p.model, p.origAt[0], p.origAt[1], p.origMsgs, in)
	if bytes.Equal(p.orig, p.sent) {
		rec.TokensSent, out = rec.TokensIn, in
	} else {
		rec.TokensSent, out = s.count(p.sent, p.format, p.model, p.sentAt[0], p.sentAt[1], p.sentMsgs, out)
	}
	rec.Saved = rec.TokensIn - rec.TokensSent
	if p.format == transcript.Anthropic {
		rec.Markers = p.markers
	}
	if s.State == nil || rec.Conversation == "" {
		return
	}
	unlock := s.State.Lock(rec.Conversation)
	cur, err := s.State.Get(rec.Conversation)
	if err != nil || cur == nil {
		unlock()
		return
	}
	// A copy: the state kept is shared with the status page, never changed once kept.
	st := *cur
	st.Answered = s.now()
	if in != nil {
		st.In = in
	}
	if out != nil {
		st.Out = out
	}
	st.Requests++
	st.TokensIn += rec.TokensIn
	st.TokensSent += rec.TokensSent
	st.Saved += rec.Saved
	if rec.Fallback != "" {
		st.Fallback++
	}
	st.SentHead, st.SentTail, st.SentWhole = sentAround(p, st.Sent)
	write := s.State.PrepareSent(&st, s.sentMeta(&st, rec, p))
	unlock() // the conversation's next request need not wait for the disk
	if err := write(); err != nil {
		rec.Warning = strings.TrimPrefix(rec.Warning+"; ", "; ") + "state not written: " + err.Error()
	}
}

// withMarkers is the indices of the messages of raws that hold a "cache_control" (a
// marker, as a rule): known for the first from of them, the others read.
func withMarkers(raws []string, from int, known []int) []int {
	out := append([]int(nil), known...)
	for i := from; i < len(raws); i++ {
		if hasMarker(raws[i]) {
			out = append(out, i)
		}
	}
	return out
}

// capMarkers keeps the request within MaxMarkers cache_control markers once the last sent
// history (with the markers it carried) and the new messages (with the client's) are put
// together: the oldest message markers go first, so the newest, where the client put the
// end of the prefix to cache, stay. Only the messages that lose a marker change. marks are
// the messages of raws that may hold one (withMarkers); it returns those that still do.
func capMarkers(top int, raws []string, marks []int) ([]string, []int) {
	total := top
	for _, i := range marks {
		total += countMarkers(gjson.Get(raws[i], "content"))
	}
	kept := marks[:0:0]
	for _, i := range marks {
		if total <= MaxMarkers {
			kept = append(kept, i)
			continue
		}
		blocks := gjson.Get(raws[i], "content")
		if !blocks.IsArray() {
			kept = append(kept, i)
			continue
		}
		m := raws[i]
		for j, b := range blocks.Array() {
			if total <= MaxMarkers {
				break
			}
			if b.Get("cache_control").Exists() {
				if out, err := sjson.Delete(m, "content."+strconv.Itoa(j)+".cache_control"); err == nil {
					m = out
					total--
				}
			}
		}
		raws[i] = m
		if hasMarker(m) {
			kept = append(kept, i)
		}
	}
	return raws, kept
}

// hasMarker reports whether s holds the key "cache_control", looked for from its
// underscore: strings.Index looks for a needle's first byte, and the quote is in JSON every
// few bytes, which makes it fall back to a search ten times slower on a request's text.
func hasMarker(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], `_control"`)
		if j < 0 {
			return false
		}
		j += i
		if j >= len(`"cache`) && s[j-len(`"cache`):j] == `"cache` {
			return true
		}
		i = j + 1
	}
}
