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
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/measure"
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
	// markers are the cache_control markers of sent outside its messages (Anthropic);
	// marks the messages of sentMsgs that hold one, when marked: else they are found
	// after the response (sentMarks), a first request's messages not read for them before.
	markers int
	marks   []int
	marked  bool
	tools   int    // the tools sent offers
	cwd     string // the working directory the client's body names (sent.go)
	// sentT and sentTally are sent as the pipeline read and counted it (its messages
	// sentMsgs), when it did: sent's count is theirs.
	sentT     *transcript.Transcript
	sentTally *measure.Tally
	// origT and origTally are orig as the pipeline read and counted it (its messages
	// origMsgs), when orig is what it was given and it counted it: orig's count is theirs.
	origT     *transcript.Transcript
	origTally *measure.Tally
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
	memo := s.clients.take(key)
	client := &clientBody{format: format, body: body, msgs: cur, prev: memo.t, formed: memo.formed, later: st != nil,
		alike: memo.alike, lastMsgs: memo.lastMsgs, lastTTLs: memo.lastTTLs}
	defer func() {
		s.clients.put(key, clientMemo{cmp.Or(client.t, client.prev), client.formed, client.alike, client.lastMsgs, client.lastTTLs})
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
	// inCheck holds the rebuilt request, once the pipeline has read it.
	var inCheck func(*transcript.Transcript) error
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
			if s.Pipe != nil {
				// Held once the pipeline has read it (its first Doc), which then is not
				// read twice; refused, nothing is piped.
				inCheck = func(t *transcript.Transcript) error {
					return client.holds(rebuilt, heldOut{t: t, msgs: raws, outside: true})
				}
			} else {
				err = client.holds(rebuilt, heldOut{msgs: raws, outside: true})
			}
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
	// The pipeline's output as the stages read and counted it, when they did.
	var sentT, origT *transcript.Transcript
	var sentTally, origTally *measure.Tally
	if s.Pipe != nil && !refused {
		pd, err := s.pipe(r, key, format, built, s.clock(st, client.cacheTTL(top)), inCheck)
		var osc scanned
		var outMsgs []string
		var out []byte
		if err == nil {
			out = pd.out
			// The output read against the messages piped in: those the tiers left as they
			// were are compared, not read again.
			in := sentMsgs
			var ok bool
			if osc, ok = scanBody(out, format, func(string) [][]string { return [][]string{in} }); ok {
				outMsgs = make([]string, len(osc.msgs))
				for i, m := range osc.msgs {
					outMsgs[i] = m.Raw
				}
			}
			h := heldOut{t: pd.outT, msgs: outMsgs, in: pd.inT, inMsgs: in}
			// (The request piped in is the client's body but for its message array.)
			h.outside = outMsgs != nil && bytes.Equal(out[:osc.start], body[:sc.start]) && bytes.Equal(out[osc.end:], body[sc.end:])
			if err = client.holds(out, h); err != nil {
				err = fmt.Errorf("pipeline output %w", err)
			}
		}
		if err != nil {
			rec.Fallback = err.Error() // (a refusal says "state: the rebuilt request …")
			sent = body
			rec.Extended, marked = false, false
			sentMsgs = sentMsgs[:0]
			for _, m := range cur {
				sentMsgs = append(sentMsgs, m.Raw)
			}
		} else {
			sent, rec.Tiers = out, pd.fired
			if pd.inTally != nil && bytes.Equal(built, body) {
				// The request piped in is the client's: the stages counted what came in.
				origT, origTally = pd.inT, pd.inTally
			}
			if outMsgs != nil {
				outScan = &osc
				sentMsgs = outMsgs
				sentT, sentTally = pd.outT, pd.tally
				if marked {
					// The messages the tiers left as they came hold the markers they held.
					var kept []int
					for _, i := range marks {
						if i < osc.known {
							kept = append(kept, i)
						}
					}
					marks = withMarkers(sentMsgs, osc.known, kept)
				}
			} else {
				marked = false
				sentMsgs = nil
				for _, m := range gjson.GetBytes(sent, arrayKey(format)).Array() {
					sentMsgs = append(sentMsgs, m.Raw)
				}
			}
		}
	}
	rec.body = sent
	rec.MessagesSent = len(sentMsgs)
	// Messages not yet read for markers (a first request's, a fallback's) are read after
	// the response (finish): the state is kept without their marks, which the next request
	// finds itself if it comes first (capMarkers' old marks).

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
	p.sentT, p.sentTally = sentT, sentTally
	p.origT, p.origTally = origT, origTally
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
		p.marks, p.marked = marks, marked
	}
	return rec, p
}

// sentMarks are the messages of what p sent that hold a cache_control (Anthropic), and the
// markers it sent in all: those of its messages read for them now unless rewrite had.
func (p *pending) sentMarks() ([]int, int) {
	marks := p.marks
	if !p.marked {
		marks = withMarkers(p.sentMsgs, 0, nil)
	}
	n := p.markers
	for _, i := range marks {
		n += countMarkers(gjson.Get(p.sentMsgs[i], "content"))
	}
	return marks, n
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
	toolList                      gjson.Result    // tools
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
		top.toolList = v
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
			h = convstate.HashOf(raw, canonical)
		}
		hashes[i] = convstate.HashOf(cur[i].Raw, canonical)
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

// refusal is the request rebuilt on the state refused before it was piped (inCheck).
type refusal struct{ err error }

func (e *refusal) Error() string { return "state: the rebuilt request " + e.err.Error() }

// pipe runs the pipeline on in (the client's body, or the one rebuilt on the state) at
// the time clock says, and returns its output, the output parsed when the pipeline parsed
// it as the format (nil: not known), and the tiers that fired. inCheck, when set, holds in
// to the client's body before anything is piped, given in parsed when the in-process
// pipeline reads it (nil otherwise); its error comes back as a *refusal.
func (s *Server) pipe(r *http.Request, key string, format transcript.Format, in []byte, clock pipeline.Clock, inCheck func(*transcript.Transcript) error) (*piped, error) {
	env := make(map[string]string, len(s.Env)+5)
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
	for k, v := range clockEnv(clock) { // for the stages that run as their commands
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
		return nil, fmt.Errorf("pipeline: %w", tiersErr)
	}
	env["CTX_FORMAT"] = string(format)
	lookup := replay.StageEnv(getenv, env)
	reading := transcript.Options{Format: format, Path: lookup("CTX_PATH"), Sidechains: lookup("CTX_SIDECHAINS") == "true"}
	// The conversation's last request as the pipeline sent it, when kept: what this one
	// holds of it is neither parsed nor counted again (its counts only when the same tiers
	// counted them: not under --summarizer upstream's per-request tiers).
	var seed *pipeline.Doc
	if tiers != nil {
		seed = s.docs.take(key)
	}
	if inCheck != nil {
		// in is held before anything is piped; the in-process pipeline's first Doc is its
		// parse, which the stages then run on (read once).
		var t *transcript.Transcript
		kept := seed
		if tiers != nil {
			if d, err := pipeline.NewFrom(seed, in, reading, tiers.Env, clock); err == nil {
				seed = d
				if reading.Path == "" && !reading.Sidechains {
					t = d.T
				}
			}
		}
		if err := inCheck(t); err != nil {
			if kept != nil {
				s.docs.put(key, kept) // for the next request, as if none had been taken
			}
			return nil, &refusal{err}
		}
	}
	statsPath := ""
	if s.TempDir != "" && (tiers == nil || !tiers.InProcess(reading)) {
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
		out     []byte
		fired   []replay.Firing        // what the tiers did, when they ran in process
		outT    *transcript.Transcript // out as Parse reads it under the format, when the pipeline read it so
		tally   *measure.Tally         // outT as the stages counted it
		inT     *transcript.Transcript // in as the pipeline read it, likewise
		inTally *measure.Tally         // inT as the stages counted it, when they did
		err     error
	}
	done := make(chan result, 1)
	go func() {
		if tiers == nil {
			out, err := s.Pipe.Run(ctx, in, getenv, env)
			done <- result{out: out, err: err}
			return
		}
		run := *tiers
		run.StatsFile = statsPath // for the stages that run as their commands
		d, results, err := replay.RunInProcessFrom(ctx, &run, seed, in, reading, clock, lookup)
		if run.Env.Flush != nil {
			run.Env.Flush()
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		res := result{out: d.Raw}
		res.fired, _, _ = replay.Firings(results)
		if reading.Path == "" && !reading.Sidechains {
			res.outT = d.T
			if len(results) > 0 {
				res.inT, res.inTally = results[0].InT, results[0].InTally
			}
			// Read before the Doc is lent to the next request (it fills in its counts).
			res.tally, _ = d.Tally()
		}
		s.docs.put(key, d)
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
			return nil, fmt.Errorf("pipeline: did not finish within %v", timeout)
		}
		return nil, fmt.Errorf("pipeline: %w", ctx.Err())
	}
	out, err := res.out, res.err
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	var fired []replay.Firing
	switch {
	case tiers != nil:
		fired = res.fired
	case statsPath != "":
		if data, err := os.ReadFile(statsPath); err == nil {
			fired, _, _ = replay.ParseStats(data)
		}
	}
	if fired == nil {
		fired = []replay.Firing{}
	}
	return &piped{out: out, outT: res.outT, inT: res.inT, tally: res.tally, inTally: res.inTally, fired: fired}, nil
}

// piped is what the pipeline made of a request: its output, the output parsed and counted
// and the request parsed as the pipeline read them under the format (nil: not known), and
// the tiers that fired.
type piped struct {
	out            []byte
	outT, inT      *transcript.Transcript
	tally, inTally *measure.Tally // outT and inT as the stages counted them
	fired          []replay.Firing
}

// clock is what the stages need to know of time, which an API body does not carry: now,
// when the conversation's previous request was answered (the prompt cache was last
// written then, so ctx-snip's idle rule counts from it), and the cache lifetime the
// request asks for when it is longer than the default (Anthropic's ttl of 1h). The times
// are wall-clock times in UTC, as the stages' commands read them back from clockEnv.
func (s *Server) clock(st *convstate.State, ttl time.Duration) pipeline.Clock {
	c := pipeline.Clock{Now: s.now().UTC().Round(0), CacheTTL: ttl}
	if st != nil && !st.Answered.IsZero() {
		c.CachedAt = st.Answered.UTC().Round(0)
	}
	return c
}

// clockEnv is c as the stages that run as their commands read it: their environment.
func clockEnv(c pipeline.Clock) map[string]string {
	env := map[string]string{"CTX_NOW": c.Now.Format(time.RFC3339Nano)}
	if !c.CachedAt.IsZero() {
		env["CTX_SNIP_CACHED_AT"] = c.CachedAt.Format(time.RFC3339Nano)
	}
	if c.CacheTTL > 0 {
		env["CTX_SNIP_CACHE_TTL"] = c.CacheTTL.String()
	}
	return env
}

// cacheTTL is the longest cache lifetime the cache_control markers of the client's body
// ask for ("ttl": "5m" or "1h"; 0 when none names one), top its top-level fields: each
// message is read unless it is the last body's at its place (the same string), whose
// lifetime is remembered.
func (c *clientBody) cacheTTL(top topFields) time.Duration {
	longest := max(blocksTTL(top.prompt[0]), blocksTTL(top.toolList))
	if arrayKey(c.format) != "messages" {
		return longest
	}
	ttls := make([]time.Duration, len(c.msgs))
	for i, m := range c.msgs {
		if i < len(c.lastMsgs) && sameString(c.lastMsgs[i], m.Raw) {
			ttls[i] = c.lastTTLs[i]
		} else {
			ttls[i] = messageTTL(m.Raw)
		}
		longest = max(longest, ttls[i])
	}
	c.lastMsgs, c.lastTTLs = make([]string, len(c.msgs)), ttls
	for i, m := range c.msgs {
		c.lastMsgs[i] = m.Raw
	}
	return longest
}

// messageTTL is the longest cache lifetime the blocks of a message's content ask for.
func messageTTL(raw string) time.Duration {
	if !strings.Contains(raw, `"ttl"`) {
		return 0
	}
	return blocksTTL(gjson.Get(raw, "content"))
}

// blocksTTL is the longest cache lifetime a list of blocks (system, tools, a message's
// content) asks for.
func blocksTTL(blocks gjson.Result) time.Duration {
	if !strings.Contains(blocks.Raw, `"ttl"`) {
		return 0
	}
	longest := time.Duration(0)
	blocks.ForEach(func(_, b gjson.Result) bool {
		if d, err := time.ParseDuration(b.Get("cache_control.ttl").String()); err == nil && d > longest {
			longest = d
		}
		return true
	})
	return longest
}

// clientBody is the body a client sent, to which any other body the proxy would send in
// its place is held (holds). It is parsed only when needed, once, and read from the
// conversation's last client body: a request that goes out as it came costs no parse.
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
	later  bool                   // a request of a conversation with a state: not its first
	// alike are the last body held's messages found alike the client's (remember).
	alike []alikePair
	// lastMsgs are the last body's messages and lastTTLs the cache lifetime each asks
	// for (cacheTTL), for this body's to be read from.
	lastMsgs []string
	lastTTLs []time.Duration
	// formed are the messages the last body held found well formed, by their place
	// (those the client sent are ""): the same string (not a copy: the state's, which the
	// rebuilt request and the pipeline's output reuse) at its place is not looked at again.
	formed []string
}

// clientMemo is what a conversation's next request reads its client body from.
type clientMemo struct {
	t        *transcript.Transcript
	formed   []string
	alike    []alikePair
	lastMsgs []string
	lastTTLs []time.Duration
}

// wholeReads counts the bodies holds reads whole, for the tests that hold a turn to reading
// only what is new.
var wholeReads atomic.Int64

// heldOut is what the caller of holds knows of the body it holds to the client's.
type heldOut struct {
	// t is the body as transcript.Parse reads it under the format (the pipeline's parse
	// of it), which then is not read again; nil: not known. Parse accepts only valid JSON.
	t *transcript.Transcript
	// msgs are the messages of its array as the caller read them from JSON it knows to
	// be valid (scanBody, or a splice of such messages into the client's array); nil: not
	// known.
	msgs []string
	// outside says the body is the client's but for its message array.
	outside bool
	// in and inMsgs are the request the pipeline read (its parse and messages), when the
	// body is the pipeline's output: held to the client's body before it was piped.
	in     *transcript.Transcript
	inMsgs []string
}

// holds returns nil when out may be sent instead of the client's body: out is that body,
// or it is JSON that reads as the format, every message of it is well formed (or is one of
// the client's own), and it breaks no rule of ctx-repair --check more often than the
// client's body does (a problem the client sent is not the proxy's to fix, but it must add
// none). The error completes "the rebuilt request ..." or "pipeline output ...".
//
// Only what is new is looked at: a message the client sent at its place, or that the last
// body held found well formed (the same string), is not read again; and when out's
// messages read alike to ctx-repair's rules as the client's (repair.SameProblems: the
// tiers changed texts, not what the rules read), neither body is checked whole. That is
// told message by message (alikeAll) without reading the client's body where out was
// parsed and is the client's outside its messages (Anthropic), else from the client's
// body parsed (from its last one).
func (c *clientBody) holds(out []byte, h heldOut) error {
	if bytes.Equal(out, c.body) {
		return nil
	}
	msgs := h.msgs
	if msgs == nil {
		wholeReads.Add(1)
		if h.t == nil && !gjson.ValidBytes(out) {
			return errors.New("is not JSON")
		}
		arr := gjson.GetBytes(out, arrayKey(c.format))
		if !arr.IsArray() {
			return fmt.Errorf("has no %q array", arrayKey(c.format))
		}
		arr.ForEach(func(_, m gjson.Result) bool {
			msgs = append(msgs, m.Raw)
			return true
		})
	}
	formed := make([]string, len(msgs))
	for i, m := range msgs {
		if i < len(c.msgs) && m == c.msgs[i].Raw {
			continue // the client's, at its place: one memory comparison, or none
		}
		if i < len(c.formed) && sameString(c.formed[i], m) {
			formed[i] = m
			continue
		}
		// A message as the client sent it is the client's word, well formed or not; the
		// others (the state's, the tiers') are looked at.
		why := malformed(c.format, gjson.Parse(m))
		if why == "" {
			formed[i] = m
			continue
		}
		if !c.sent(m) && !c.isOdd(m) {
			return fmt.Errorf("is not a valid request: %s.%d %s", arrayKey(c.format), i, why)
		}
	}
	if h.t != nil && h.t.Format == c.format && h.outside && c.format == transcript.Anthropic && c.alikeAll(msgs, h) {
		c.formed = formed
		c.remember(msgs, h.t)
		return nil
	}
	t := h.t
	if t == nil || t.Format != c.format {
		wholeReads.Add(1)
		var err error
		if t, err = transcript.Parse(out, transcript.Options{Format: c.format}); err != nil {
			return fmt.Errorf("does not read as %s: %v", c.format, err)
		}
	}
	// The client's body is read (from the last one, but for a conversation's second
	// request) when that costs less than checking out whole, as a rule: not for a first
	// request, whose body may well have no problem at all.
	if c.later || c.prev != nil {
		c.read()
	}
	if c.parsed && c.err == nil && repair.SameProblems(t, c.t) {
		c.formed = formed
		c.remember(msgs, t)
		return nil
	}
	wholeReads.Add(1)
	now := repair.Counts(repair.Check(t))
	if len(now) > 0 {
		c.read()
		if c.err != nil {
			return fmt.Errorf("fails ctx-repair --check (%s), and the client's body does not read as %s: %v", firstRule(now), c.format, c.err)
		}
		c.check()
		for _, rule := range repair.Rules {
			if now[rule] > c.counts[rule] {
				return fmt.Errorf("fails ctx-repair --check: %s (%d, the client's body %d)", rule, now[rule], c.counts[rule])
			}
		}
	}
	c.formed = formed
	c.alike = nil
	return nil
}

// alikePair is a message of a body held and the client's at its place, found to read
// alike to ctx-repair's rules (repair.SameMessage).
type alikePair struct{ out, client string }

// remember keeps, for the next body held, that each of msgs (out's messages, t their
// parse) reads alike the client's at its place: out was found to have the same problems
// as the client's body message by message. Anthropic alone, whose messages each read
// alone (their reading depends on no other).
func (c *clientBody) remember(msgs []string, t *transcript.Transcript) {
	c.alike = nil
	if c.format != transcript.Anthropic || len(msgs) != len(c.msgs) || len(arrayMessages(t)) != len(msgs) {
		return
	}
	c.alike = make([]alikePair, len(msgs))
	for i, m := range msgs {
		c.alike[i] = alikePair{m, c.msgs[i].Raw}
	}
}

// alikeAll reports whether each of msgs, the messages of a body the format reads (h.t),
// reads alike to ctx-repair's rules the client's at its place, told without reading the
// client's body: the same bytes; a pair found alike before (the same strings, the
// client's in the same reading); or, for the pipeline's output, the message piped in at
// its place, itself alike the client's, and alike that as the pipeline read both.
func (c *clientBody) alikeAll(msgs []string, h heldOut) bool {
	if len(msgs) != len(c.msgs) {
		return false
	}
	var outAt, inAt []int // the parses' message of each array element, when needed
	for i, o := range msgs {
		cl := c.msgs[i].Raw
		if o == cl || c.wasAlike(i, o, cl) {
			continue
		}
		if h.in == nil || len(h.inMsgs) != len(msgs) {
			return false
		}
		p := h.inMsgs[i]
		if p != cl && !c.wasAlike(i, p, cl) && !sameReading(p, cl) {
			return false
		}
		if sameString(o, p) {
			continue
		}
		if outAt == nil {
			outAt, inAt = arrayMessages(h.t), arrayMessages(h.in)
			if len(outAt) != len(msgs) || len(inAt) != len(msgs) {
				return false
			}
		}
		if !repair.SameMessage(h.t, outAt[i], h.in, inAt[i]) {
			return false
		}
	}
	return true
}

// wasAlike reports whether o and cl, a message held and the client's at place i, are a
// pair found alike before: o the same string, cl the same or read the same.
func (c *clientBody) wasAlike(i int, o, cl string) bool {
	if i >= len(c.alike) || !sameString(c.alike[i].out, o) {
		return false
	}
	was := c.alike[i].client
	return was == cl || sameReading(was, cl) // (== is at once for one string in memory)
}

// arrayMessages are the indices of t's messages that are elements of its message array
// (not a header: the system prompt), in order.
func arrayMessages(t *transcript.Transcript) []int {
	out := make([]int, 0, len(t.Messages))
	for i := range t.Messages {
		if !t.Messages[i].Header {
			out = append(out, i)
		}
	}
	return out
}

// sameString reports whether a and b are one string in memory (so equal without reading
// them).
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// sent reports whether the client sent the message raw (anywhere in its array).
func (c *clientBody) sent(raw string) bool {
	if c.raws == nil {
		c.raws = make(map[string]bool, len(c.msgs))
		for _, m := range c.msgs {
			c.raws[m.Raw] = true
		}
	}
	return c.raws[raw]
}

// clientReads counts the client bodies holds parses, for the tests that hold a turn to
// reading only what is new.
var clientReads atomic.Int64

// read parses the client's body, once, from the conversation's last one.
func (c *clientBody) read() {
	if c.parsed {
		return
	}
	c.parsed = true
	clientReads.Add(1)
	c.t, c.err = transcript.Reparse(c.prev, c.body, transcript.Options{Format: c.format})
}

// check counts ctx-repair's problems in the client's body, once; it must read.
func (c *clientBody) check() {
	if c.counts == nil {
		c.counts = repair.Counts(repair.Check(c.t))
	}
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
	if s.Store != "" { // (what a stage wrote though it did not fire, or failed after)
		if err := store.SyncWritten(); err != nil {
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
	if total, n, ok := s.countOf(p.origT, p.origTally, p.model, p.origMsgs); ok {
		rec.TokensIn, in = total, n // as the pipeline counted what came in: no count here
	} else {
		// (The client's body: scanBody found it JSON, each of its messages one value.)
		rec.TokensIn, in = s.count(p.orig, true, p.format, p.model, p.origAt[0], p.origAt[1], p.origMsgs, in)
	}
	if bytes.Equal(p.orig, p.sent) {
		rec.TokensSent, out = rec.TokensIn, in
	} else if total, n, ok := s.countOf(p.sentT, p.sentTally, p.model, p.sentMsgs); ok {
		rec.TokensSent, out = total, n // as the pipeline counted it: one count
	} else {
		rec.TokensSent, out = s.count(p.sent, false, p.format, p.model, p.sentAt[0], p.sentAt[1], p.sentMsgs, out)
	}
	rec.Saved = rec.TokensIn - rec.TokensSent
	var marks []int
	if p.format == transcript.Anthropic {
		marks, rec.Markers = p.sentMarks()
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
	if p.format == transcript.Anthropic && !st.Marked && len(st.Sent) == len(p.sentMsgs) && convstate.CommonPrefix(st.Sent, p.sentMsgs) == len(st.Sent) {
		// The marks read after the response, for the next request (capMarkers).
		st.Marks, st.Marked = marks, true
	}
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
