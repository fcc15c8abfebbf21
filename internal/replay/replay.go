// Package replay is ctx-replay: it replays a saved session request by request through a
// pipeline of filters, the way an agent running ctxkit before every request would have
// sent it, and measures what each request cost with the prompt cache.
//
// At each request point (Points) the history is the previous request as sent plus the
// messages that came since; the pipeline's output is the request sent. Each request is
// measured with the figure every tier decides on (the recorded prompt size where the
// session records one, less what the pipeline removed), its cached prefix (the messages it
// shares, byte for byte, with the request before, plus the part the file does not hold),
// and its cost at the model's cache prices, against the session sent as it was.
//
// Replay is the loop; Main is the command-line adapter around it.
package replay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Options configure a replay.
type Options struct {
	Pipe *Pipeline
	// Parse reads a document the way the session was read (format, --path, sidechains).
	Parse func([]byte) (*transcript.Transcript, error)
	// Detect, when set, is the format a document reads as when none is given. Parse reads
	// the pipeline's output in the session's format, as a tier's output must read; Detect
	// tells a pipeline that handed back another format (ctx-convert, a program of the
	// user's), which is refused. Only JSON formats are checked: Parse refuses a JSONL log
	// of another format by itself.
	Detect  func([]byte) (transcript.Format, error)
	Counter tokens.Counter
	// Effective is the window a request must fit in (the window less the reply's reserve).
	Effective int
	// Overhead is the part the document does not hold, for a session that records no usage.
	Overhead int
	Price    tokens.Price
	// TTL is how long the provider keeps a prompt cached after its last use; a request
	// sent later than that after the one before reads nothing from the cache. 0: forever.
	TTL time.Duration
	// Timeout bounds one request's pipeline run; 0: no bound.
	Timeout time.Duration
	// Getenv is the environment in-process stages see; Env is set for every stage on top
	// of it (the store, the stats file, the window), and CTX_NOW to each request's time.
	Getenv func(string) string
	Env    map[string]string
	// StatsFile is where every stage appends its --stats line (CTX_STATS_FILE); Replay
	// reads and empties it after each request.
	StatsFile string
	// Check runs ctx-repair's rules on every request sent.
	Check bool
	// Save, when set, is given every request as sent (turn is 1-based).
	Save func(turn int, doc []byte) error
	// Points are the requests to replay; nil: SessionPoints(orig, Parse).
	Points []Point
	// Stages, when set, is Pipe as an in-process pipeline over one parsed document
	// (Pipeline.Stages): each request goes through it instead of through Pipe's stages
	// each reading and writing the bytes.
	Stages *pipeline.Pipeline
	// Reading is how Stages read a request (the session's format, --path, --sidechains).
	Reading transcript.Options
	// Reparse reads each request from the one before it (transcript.Reparse under
	// Reading: the messages it holds unchanged are neither parsed nor counted again)
	// instead of through Parse; the figures are the same.
	Reparse bool
}

// Firing is one stage of the pipeline that changed a request.
type Firing struct {
	Tool    string `json:"tool"`
	Saved   int    `json:"saved"`
	Items   int    `json:"items"`
	Trigger string `json:"trigger,omitempty"`
}

// Turn is one request replayed.
type Turn struct {
	Turn    int       `json:"turn"`    // 1-based
	Message int       `json:"message"` // index of the reply in the session
	Time    time.Time `json:"time,omitzero"`
	// Tokens is the request as sent, Uncompacted as the session sent it. In is what the
	// pipeline was given: the request sent before plus the messages since, the request
	// had the pipeline not run this time.
	Tokens      int `json:"tokens"`
	Uncompacted int `json:"tokens_uncompacted"`
	In          int `json:"tokens_in"`
	// Cached is the part of the request read from the prompt cache; Written the rest,
	// which the request writes to it. As recorded, they are the session's own figures
	// where it records them (cache reads; Claude Code's cache writes, Codex's cached
	// input), and Cost prices its own split; the request sent is priced the same while
	// the pipeline has sent what the session sent, else by the cache model (cachedPrefix).
	Cached             int `json:"cached"`
	Written            int `json:"cache_written"`
	CachedUncompacted  int `json:"cached_uncompacted"`
	WrittenUncompacted int `json:"cache_written_uncompacted"`
	// CacheBreak: the request does not extend the one before (the pipeline changed what
	// had been sent), while the cache was still warm.
	CacheBreak bool `json:"cache_break"`
	// Cold: the cache had expired (TTL) since the request before.
	Cold bool `json:"cold,omitempty"`
	// ClientCompaction: the client compacted the history before this request (Claude
	// Code's compact_boundary, Codex's compacted record). The request is the compacted
	// history the client sent, put through the pipeline afresh; the cache it breaks is
	// the client's doing, not counted in CacheBreak.
	ClientCompaction bool     `json:"client_compaction,omitempty"`
	Fired            []Firing `json:"fired"`
	// Broke names the stages that broke the cache: in process, those that changed what
	// the request before held; in a shell, whose stages are not seen, the tiers that saved
	// tokens.
	Broke []string `json:"broke_cache,omitempty"`
	// Seen is the size the pipeline's last stage gave for the request it wrote: what the
	// tiers believed they sent (Tokens is the truth).
	Seen        int     `json:"seen,omitempty"`
	Utilization float64 `json:"utilization"`
	OverWindow  bool    `json:"over_window"`
	// OverWindowUncompacted: the request as the session sent it was over the window.
	OverWindowUncompacted bool `json:"over_window_uncompacted"`
	// Floor is the least the request could be: the part the file does not hold, the tool
	// schemas, and the messages no tier may change (the system prompt, pinned context, the
	// newest user and the newest assistant message); Unavoidable says it is over the
	// window, so that no pipeline of ctxkit's tiers could have fitted it.
	Floor       int  `json:"floor"`
	Unavoidable bool `json:"over_window_unavoidable,omitempty"`
	// Problems are ctx-repair's findings on the request sent that the session's own
	// request does not have (with Options.Check): what the pipeline broke.
	Problems        int     `json:"problems,omitempty"`
	Cost            float64 `json:"cost"`
	CostUncompacted float64 `json:"cost_uncompacted"`

	// modelled is CachedUncompacted as the cache model works it out, where the session
	// records its own split (which CachedUncompacted then is): what the model is tested on.
	modelled int
}

// Totals sum a replay.
type Totals struct {
	// Requests are the requests replayed; Recorded those the session records a usage
	// figure for, before its compactions too and on branches it left (a subagent's
	// requests are in its own log); ClientCompactions the compactions the client made
	// between two requests replayed.
	Requests          int            `json:"requests"`
	Recorded          int            `json:"requests_recorded"`
	ClientCompactions int            `json:"client_compactions"`
	OverWindow        int            `json:"over_window"`
	OverUncompacted   int            `json:"over_window_uncompacted"`
	Unavoidable       int            `json:"over_window_unavoidable"`
	CacheBreaks       int            `json:"cache_breaks"`
	Firings           map[string]int `json:"firings"`
	Saved             map[string]int `json:"saved"`
	Tokens            int            `json:"tokens_sent"`
	Uncompacted       int            `json:"tokens_uncompacted"`
	Cached            int            `json:"tokens_cached"`
	CachedUncompacted int            `json:"tokens_cached_uncompacted"`
	Cost              float64        `json:"cost"`
	CostUncompacted   float64        `json:"cost_uncompacted"`
	BilledRatio       float64        `json:"billed_ratio"`
	SentRatio         float64        `json:"sent_ratio"`
	// Repeats counts turns on which a stage fired, breaking the cache, right after firing
	// the turn before;
	// RepeatsNeeded those of them whose request would otherwise have been over the window
	// (In over it).
	Repeats       int `json:"repeat_firings"`
	RepeatsNeeded int `json:"repeat_firings_needed"`
	// Unrepaid counts, by tier, the firings on requests that broke the cache whose saving
	// did not pay the break back: what the request cost beyond the one before with the
	// messages since (at the cache prices), against what each later request reads less,
	// up to the end of the session or until the cache goes cold. A break is counted
	// against the stages that made it (Turn.Broke).
	Unrepaid map[string]int `json:"unrepaid_firings,omitempty"`
	Problems int            `json:"requests_with_problems,omitempty"`
	// Oracle is the best any schedule of compactions could have done (see Floor).
	Oracle Floor `json:"oracle"`
}

// TurnError is a replay that stopped: the request it stopped at and why.
type TurnError struct {
	Turn, Requests int
	Err            error
}

func (e *TurnError) Error() string {
	return fmt.Sprintf("request %d of %d: %v", e.Turn, e.Requests, e.Err)
}
func (e *TurnError) Unwrap() error { return e.Err }

// sent is a request as measured: its document, its messages' tokens, its size.
type sent struct {
	t        *transcript.Transcript
	messages []int  // each message's tokens, framing included
	schema   string // the tool schemas as written
	fixed    int    // the tool schemas' tokens and the reply's priming
	counted  int    // what the file holds, in tokens
	hidden   int    // the part it does not hold (may be negative: counted too high)
	total    int    // counted + hidden: the request's size
	time     time.Time
	// tally is t counted (measure.Of), which the next request's counting reuses for the
	// messages it holds unchanged (measure.OfNext); doc is the pipeline's output as the
	// in-process pipeline left it, parse and counts, for the next request to start from.
	tally *measure.Tally
	doc   *pipeline.Doc
}

// Replay runs the session orig through the pipeline at every request point and calls each
// with each turn as it is measured.
func Replay(ctx context.Context, orig *transcript.Transcript, o Options, each func(Turn) error) (Totals, error) {
	points := o.Points
	if points == nil {
		var err error
		if points, err = SessionPoints(orig, o.Parse); err != nil {
			return Totals{}, fmt.Errorf("reading the session before a compaction: %w", err)
		}
	}
	tot := Totals{Requests: len(points), Recorded: recordedRequests(orig, points), Firings: map[string]int{}, Saved: map[string]int{}}
	var prevSent, prevOrig *sent
	var prevFired map[string]bool
	prevBroke := false
	steps := make([]oracleStep, 0, len(points))
	breaks := make([]breakStep, 0, len(points))
	var reqs requests
	for i, p := range points {
		turn, s, u, fired, err := o.step(ctx, orig, points, i, prevSent, prevOrig, &reqs)
		if err != nil {
			return tot, &TurnError{Turn: i + 1, Requests: len(points), Err: err}
		}
		// A stage that changed only what is new this turn (ctx-budget normalizing or
		// capping the newest result at arrival) broke no cache: not a repeat firing, the
		// compaction loop this counts, however often it happens. So both turns must have
		// broken the cache.
		for tool := range fired {
			if prevFired[tool] && prevBroke && turn.CacheBreak {
				tot.Repeats++
				if o.Effective > 0 && turn.In > o.Effective {
					tot.RepeatsNeeded++
				}
				break
			}
		}
		step := oracleStep{uncompacted: turn.Uncompacted, floor: turn.Floor, base: u.base(), warm: i > 0 && !turn.Cold, restart: turn.ClientCompaction}
		if p.Recorded > 0 {
			step.recorded, step.adjust = true, turn.CachedUncompacted-turn.modelled
			step.fresh, step.written = p.Recorded-p.CacheRead-p.CacheWrite, p.CacheWrite
		}
		steps = append(steps, step)
		breaks = append(breaks, o.breakOf(turn, prevSent))
		turn.Message = p.Message
		tot.add(turn)
		if err := each(turn); err != nil {
			return tot, err
		}
		prevSent, prevOrig, prevFired, prevBroke = s, u, fired, turn.CacheBreak
	}
	tot.Unrepaid = unrepaid(breaks, o.Price)
	tot.BilledRatio = ratio(tot.Cost, tot.CostUncompacted)
	tot.SentRatio = ratio(float64(tot.Tokens), float64(tot.Uncompacted))
	tot.Oracle = floorOf(steps, o.Effective, o.Price)
	tot.Oracle.BilledRatio = ratio(tot.Oracle.Cost, tot.CostUncompacted)
	return tot, nil
}

// breakStep is what judging a request's cache break needs (Totals.Unrepaid): what the
// break cost, the tokens the request saved, the tiers that saved them, and whether the
// cache was warm for it.
type breakStep struct {
	broke bool
	cost  float64
	saved int
	tools []string
	warm  bool
}

// breakOf measures turn's cache break: the request as sent against the one before with
// the messages since, unchanged, which would have read all of the one before.
func (o *Options) breakOf(turn Turn, prev *sent) breakStep {
	b := breakStep{broke: turn.CacheBreak, warm: prev != nil && !turn.Cold && !turn.ClientCompaction}
	if !b.broke || prev == nil {
		return b
	}
	b.saved = turn.In - turn.Tokens
	b.cost = o.Price.Cost(turn.Tokens, turn.Cached) - o.Price.Cost(turn.In, min(prev.total, turn.In))
	b.tools = turn.Broke
	return b
}

// extendsMessages reports whether t holds prev's tool schemas and messages, byte for byte,
// first: cachedPrefix's extends, without counting.
func extendsMessages(prev *sent, t *transcript.Transcript) bool {
	schema := ""
	if !t.Tools.IsZero() {
		schema = t.Slice(t.Tools)
	}
	if schema != prev.schema || len(t.Messages) < len(prev.messages) {
		return false
	}
	for k := range prev.messages {
		if !transcript.SameMessageBytes(prev.t, k, t, k) {
			return false
		}
	}
	return true
}

// firstDiff is the first offset at which a and b differ (the shorter's length when one is
// a prefix of the other).
func firstDiff(a, b []byte) int {
	return transcript.CommonPrefix(unsafe.String(unsafe.SliceData(a), len(a)), unsafe.String(unsafe.SliceData(b), len(b)))
}

// unrepaid counts, by tier, the cache breaks whose saving, read less by each later request
// while the cache stays warm, does not pay back what the break cost.
func unrepaid(steps []breakStep, p tokens.Price) map[string]int {
	out := map[string]int{}
	for i, b := range steps {
		if !b.broke || b.cost <= 0 {
			continue
		}
		later := 0
		for j := i + 1; j < len(steps) && steps[j].warm; j++ {
			later++
		}
		if p.CacheRead*float64(max(b.saved, 0))*float64(later)/1e6 >= b.cost {
			continue
		}
		for _, tool := range b.tools {
			out[tool]++
		}
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (tot *Totals) add(t Turn) {
	if t.Unavoidable {
		tot.Unavoidable++
	}
	if t.OverWindow {
		tot.OverWindow++
	}
	if t.OverWindowUncompacted {
		tot.OverUncompacted++
	}
	if t.CacheBreak {
		tot.CacheBreaks++
	}
	if t.ClientCompaction {
		tot.ClientCompactions++
	}
	for _, f := range t.Fired {
		tot.Firings[f.Tool]++
		tot.Saved[f.Tool] += f.Saved
	}
	if t.Problems > 0 {
		tot.Problems++
	}
	tot.Tokens += t.Tokens
	tot.Uncompacted += t.Uncompacted
	tot.Cached += t.Cached
	tot.CachedUncompacted += t.CachedUncompacted
	tot.Cost += t.Cost
	tot.CostUncompacted += t.CostUncompacted
}

// step replays request i: builds what the agent would send, pipes it, measures both.
func (o *Options) step(ctx context.Context, orig *transcript.Transcript, points []Point, i int, prevSent, prevOrig *sent, reqs *requests) (Turn, *sent, *sent, map[string]bool, error) {
	p := points[i]
	turn := Turn{Turn: i + 1, Time: p.Time, ClientCompaction: p.ClientCompaction}
	origDoc := sessionRequest(orig, p.Cut)
	var in []byte
	if prevSent == nil || p.ClientCompaction {
		// The first request, or the history as the client compacted it: the session's own.
		in = origDoc
	} else {
		var err error
		if in, err = reqs.extend(prevSent.t, orig, orig.Doc[points[i-1].Cut:p.Cut]); err != nil {
			return turn, nil, nil, nil, err
		}
	}

	env := make(map[string]string, len(o.Env)+1)
	for k, v := range o.Env {
		env[k] = v
	}
	if !p.Time.IsZero() {
		env["CTX_NOW"] = p.Time.UTC().Format(time.RFC3339Nano)
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	// Which stages changed what the request before held (the bytes before where this
	// request's new messages start): the ones that broke the cache, whatever else they
	// changed. A stage's edits before that point move it by what they add or take.
	bound := -1
	if prevSent != nil && !p.ClientCompaction {
		bound = len(prevSent.t.Doc)
		if !orig.Array.IsZero() {
			bound = closingBracket(prevSent.t)
		}
	}
	// A stage may also break it without changing those bytes: a Claude Code summary is
	// added after them and takes the old messages off the live chain. The outputs of the
	// stages that changed something are kept until the request is measured, to tell.
	var broke []string
	type changed struct {
		stage string
		out   []byte
	}
	var changes []changed
	each := func(stage string, in, out []byte, keep bool) {
		at := firstDiff(in, out)
		if bound >= 0 && at < bound {
			broke = append(broke, stage)
			bound = max(0, bound+len(out)-len(in))
		} else if bound >= 0 && (at < len(in) || len(in) != len(out)) {
			if !keep {
				out = bytes.Clone(out)
			}
			changes = append(changes, changed{stage, out})
		}
	}
	var out []byte
	var results []pipeline.Result // what the stages did, when they ran in process
	// the input and output parsed, when the pipeline parsed them
	var inT, outT *transcript.Transcript
	var outDoc *pipeline.Doc
	var err error
	if o.Stages != nil {
		var d, seed *pipeline.Doc
		if prevSent != nil && !p.ClientCompaction {
			seed = prevSent.doc
		}
		d, results, err = o.runStages(runCtx, seed, in, p.Time, env, func(stage string, in, out []byte, parsed *transcript.Transcript) {
			if inT == nil {
				inT = parsed
			}
			each(stage, in, out, true)
		})
		if d != nil {
			out, outT, outDoc = d.Raw, d.T, d
		}
	} else {
		out, err = o.Pipe.RunStages(runCtx, in, o.Getenv, env, func(stage string, in, out []byte) { each(stage, in, out, false) })
	}
	cancel()
	if err != nil {
		return turn, nil, nil, nil, err
	}
	if o.Save != nil {
		if err := o.Save(i+1, out); err != nil {
			return turn, nil, nil, nil, err
		}
	}
	if o.Detect != nil && !orig.Format.JSONL() {
		if err := o.sameFormat(in, out); err != nil {
			return turn, nil, nil, nil, err
		}
	}
	var fired []Firing
	var firedSet map[string]bool
	var seen int
	if o.Stages != nil {
		fired, firedSet, seen = Firings(results)
	} else if fired, firedSet, seen, err = o.readStats(); err != nil {
		return turn, nil, nil, nil, err
	}
	turn.Fired, turn.Seen = fired, seen

	u, err := o.measureFrom(prevOrig, origDoc, p.Time)
	if err != nil {
		return turn, nil, nil, nil, fmt.Errorf("reading the session's own request: %w", err)
	}
	var s *sent
	if outT != nil {
		s = o.measureParsed(outT, p.Time, prevSent)
		s.doc = outDoc
	} else {
		s, err = o.measureFrom(prevSent, out, p.Time)
	}
	if err != nil {
		return turn, nil, nil, nil, fmt.Errorf("the pipeline's output: %w", err)
	}
	if s.t.Format != orig.Format {
		return turn, nil, nil, nil, fmt.Errorf("the pipeline's output is %s, the session %s: a replay needs the session's format back", s.t.Format, orig.Format)
	}
	// Where the session records the request's size, that is the truth for the request as
	// the session sent it; the request sent is that less what the pipeline took out.
	hidden := o.Overhead
	if p.Recorded > 0 {
		hidden = p.Recorded - u.counted
	}
	u.setHidden(hidden)
	s.setHidden(hidden)
	turn.Tokens, turn.Uncompacted, turn.In = s.total, u.total, u.total
	if prevSent != nil && !p.ClientCompaction {
		var given *sent
		if inT != nil {
			given = o.measureParsed(inT, p.Time, prevSent)
		} else if given, err = o.measureFrom(prevSent, in, p.Time); err != nil {
			return turn, nil, nil, nil, fmt.Errorf("the request before, with the messages since: %w", err)
		}
		given.setHidden(hidden)
		turn.In = given.total
	}

	warm := prevSent != nil && (o.TTL <= 0 || p.Time.IsZero() || prevSent.time.IsZero() || p.Time.Sub(prevSent.time) <= o.TTL)
	if prevSent != nil && p.CacheRead > u.base() {
		// The session read its messages from the cache, not only the system prompt and
		// tools every request shares: it was warm, whatever --cache-ttl guessed (Claude
		// Code asks for an hour), and a request the pipeline changed breaks it.
		warm = true
	}
	turn.Cold = prevSent != nil && !warm
	if warm {
		var extends bool
		turn.Cached, extends = cachedPrefix(prevSent, s)
		turn.CacheBreak = !extends && !p.ClientCompaction
		if turn.CacheBreak && !o.Pipe.InProcess() {
			// a shell pipeline's stages are not seen: the tiers that saved tokens
			for _, f := range turn.Fired {
				if f.Saved > 0 {
					broke = append(broke, f.Tool)
				}
			}
		}
		if turn.CacheBreak && len(broke) == 0 {
			// no stage changed the old bytes: the first whose output no longer extends
			// the request before broke it
			for _, c := range changes {
				if t, err := o.Parse(c.out); err == nil && !extendsMessages(prevSent, t) {
					broke = append(broke, c.stage)
					break
				}
			}
		}
		turn.Broke = broke
		turn.CachedUncompacted, _ = cachedPrefix(prevOrig, u)
	}
	turn.modelled = turn.CachedUncompacted
	turn.Cost = o.Price.Cost(turn.Tokens, turn.Cached)
	turn.CostUncompacted = o.Price.Cost(turn.Uncompacted, turn.CachedUncompacted)
	if p.Recorded > 0 {
		// The session as it was sent is billed as the provider billed it: the split it
		// recorded, not the one the model works out (a cache miss, the part after the
		// last cache breakpoint). The request sent reads what the session read, moved by
		// what the model says the pipeline changed (the same where it sent what the
		// session sent), its uncached part split between fresh input and cache writes as
		// the session's was.
		fresh := p.Recorded - p.CacheRead - p.CacheWrite
		turn.CachedUncompacted = min(p.CacheRead, turn.Uncompacted)
		turn.Cached = min(max(0, turn.CachedUncompacted+turn.Cached-turn.modelled), turn.Tokens)
		turn.CostUncompacted = o.Price.Billed(fresh, p.CacheWrite, p.CacheRead)
		turn.Cost = billedAs(o.Price, turn.Tokens, turn.Cached, fresh, p.CacheWrite)
	}
	turn.Written = turn.Tokens - turn.Cached
	turn.WrittenUncompacted = turn.Uncompacted - turn.CachedUncompacted
	if o.Effective > 0 {
		turn.Utilization = float64(turn.Tokens) / float64(o.Effective)
		turn.OverWindow = turn.Tokens > o.Effective
		turn.OverWindowUncompacted = turn.Uncompacted > o.Effective
	}
	turn.Floor = u.floor()
	turn.Unavoidable = o.Effective > 0 && turn.Floor > o.Effective
	if o.Check {
		turn.Problems = introduced(repair.Counts(repair.Check(u.t)), repair.Counts(repair.Check(s.t)))
	}
	return turn, s, u, firedSet, nil
}

// runStages runs in through Stages at the request's time (RunInProcessFrom), handing each
// stage's input and output, and the input's parse, to each (which may keep them). env is set for the stages that
// run as their commands, on top of Getenv.
func (o *Options) runStages(ctx context.Context, seed *pipeline.Doc, in []byte, at time.Time, env map[string]string, each func(stage string, in, out []byte, inT *transcript.Transcript)) (out *pipeline.Doc, results []pipeline.Result, err error) {
	d, results, err := RunInProcessFrom(ctx, o.Stages, seed, in, o.Reading, pipeline.Clock{Now: at}, StageEnv(o.Getenv, env))
	if err != nil {
		return nil, nil, err
	}
	for _, r := range results {
		each(r.Stage, r.In, r.Out, r.InT)
	}
	return d, results, nil
}

// billedAs is what a prompt of total tokens, read of them from the cache, costs when the
// rest is split between fresh input and cache writes as a recorded request's was (fresh
// and written): all fresh for Codex, which records no writes, almost all written for
// Claude Code.
func billedAs(p tokens.Price, total, read, fresh, written int) float64 {
	uncached := max(0, total-read)
	f := uncached
	if fresh+written > 0 {
		f = int(int64(uncached) * int64(max(0, fresh)) / int64(fresh+written))
	}
	return p.Billed(f, uncached-f, read)
}

// sameFormat refuses a pipeline whose output reads as another format than its input did.
// Either that does not parse is left to the measuring that follows, which says why.
func (o *Options) sameFormat(in, out []byte) error {
	was, err := o.Detect(in)
	if err != nil {
		return nil
	}
	is, err := o.Detect(out)
	if err != nil || is == was {
		return nil
	}
	return fmt.Errorf("the pipeline's output reads as %s, its input as %s: a replay needs the session's format back", is, was)
}

// base is the part of the request before its messages: the part the file does not hold
// and the tool schemas.
func (s *sent) base() int {
	return max(0, s.hidden) + s.fixed
}

// floor is the least the request could be made: what no tier may change.
func (s *sent) floor() int {
	n := s.base()
	for mi := range s.t.Protected() { // system prompts, pinned context, the newest user and assistant message
		if mi < len(s.messages) {
			n += s.messages[mi]
		}
	}
	return n
}

// introduced counts the problems of each rule the request sent has beyond the session's
// own request.
func introduced(was, now map[repair.Rule]int) int {
	n := 0
	for rule, k := range now {
		n += max(0, k-was[rule])
	}
	return n
}

// measureFrom parses and counts one request, doc, a later version of prev's request (nil: none): with
// Reading set, what doc holds of prev's messages is neither parsed nor counted again.
func (o *Options) measureFrom(prev *sent, doc []byte, at time.Time) (*sent, error) {
	var t *transcript.Transcript
	var err error
	if prev != nil && o.Reparse {
		t, err = transcript.Reparse(prev.t, doc, o.Reading)
	} else {
		t, err = o.Parse(doc)
	}
	if err != nil {
		return nil, err
	}
	return o.measureParsed(t, at, prev), nil
}

// measureParsed is measure of a document parsed already (as Parse reads it), counting only
// the messages prev (nil: none) does not hold.
func (o *Options) measureParsed(t *transcript.Transcript, at time.Time, prev *sent) *sent {
	var tl *measure.Tally
	if prev != nil && prev.tally != nil {
		tl = measure.OfNext(prev.t, prev.tally, t, o.Counter)
	} else {
		tl = measure.Of(t, o.Counter, false)
	}
	framing := tl.Framing()
	s := &sent{t: t, messages: make([]int, len(tl.Messages)), time: at, tally: tl}
	for i := range tl.Messages {
		s.messages[i] = tl.Messages[i].Tokens(framing)
	}
	if !t.Tools.IsZero() {
		s.schema = t.Slice(t.Tools)
	}
	s.counted = tl.Counted()
	s.total = s.counted
	s.fixed = s.counted
	for _, n := range s.messages {
		s.fixed -= n
	}
	return s
}

// setHidden sets the part of the request its file does not hold, and so its size.
func (s *sent) setHidden(n int) {
	s.hidden = n
	s.total = max(0, s.counted+n)
}

// cachedPrefix is the part of cur the provider reads from the cache prev wrote: the part
// the file does not hold (system prompt and tools an agent sends first, unchanged), the
// tool schemas when they are prev's, then cur's messages as long as they are prev's, byte
// for byte. extends says whether all of prev is a prefix of cur.
//
// The part the file does not hold is prev's: prev's size is the truth recorded for it, and
// its hidden part is that truth less our count of it, so a request that extends prev reads
// all of prev. cur's hidden part also carries the estimate's error on the messages cur adds,
// which belongs to what cur writes, not to what it reads.
func cachedPrefix(prev, cur *sent) (cached int, extends bool) {
	if prev.schema != cur.schema {
		return min(max(0, min(prev.hidden, cur.hidden)), cur.total), false
	}
	cached = prev.hidden + cur.fixed
	n := min(len(prev.messages), len(cur.messages))
	k := 0
	for k < n && transcript.SameMessageBytes(prev.t, k, cur.t, k) {
		cached += cur.messages[k]
		k++
	}
	return max(0, min(cached, cur.total)), k == len(prev.messages)
}

// historyOf is the session cut where a request's history ends: the lines before the cut
// (JSONL), or the document with its message array closed at the cut (JSON).
func historyOf(t *transcript.Transcript, cut int) []byte {
	doc := t.Doc
	if t.Array.IsZero() {
		return []byte(doc[:cut])
	}
	closeAt := closingBracket(t)
	out := make([]byte, 0, cut+len(doc)-closeAt)
	out = append(out, doc[:cut]...)
	return append(out, doc[closeAt:]...)
}

// sessionRequest is historyOf without the copy where none is needed: the lines before the
// cut of a JSONL session are a prefix of the session's own bytes, which nothing writes to
// (the pipeline reads its input, and transcript.Parse, which measures it, requires as much).
// A copy of the session's history at every request, and another kept in the request before
// (prevOrig), held three times a long session at once.
func sessionRequest(t *transcript.Transcript, cut int) []byte {
	if t.Array.IsZero() && cut > 0 {
		return unsafe.Slice(unsafe.StringData(t.Doc), cut)
	}
	return historyOf(t, cut)
}

// extend is the request sent before (prev) with chunk added, the session's messages
// between two cuts: what an agent sends next.
func extend(prev, orig *transcript.Transcript, chunk string) ([]byte, error) {
	if orig.Array.IsZero() {
		out := make([]byte, 0, len(prev.Doc)+len(chunk)+1)
		return appendLines(append(out, prev.Doc...), chunk), nil
	}
	if prev.Array.IsZero() {
		return nil, errors.New("the pipeline's output has no message array")
	}
	// The chunk starts just after the message that ended the request before: with the
	// comma that separates it from the next.
	if len(prev.Messages) == countHeaders(prev) {
		chunk = strings.TrimLeft(chunk, " \t\r\n,")
	} else if c := strings.TrimLeft(chunk, " \t\r\n"); c != "" && c[0] != ',' {
		chunk = "," + chunk
	}
	closeAt := closingBracket(prev)
	out := make([]byte, 0, len(prev.Doc)+len(chunk))
	out = append(out, prev.Doc[:closeAt]...)
	if chunk != "" {
		// white space the tier left before "]" goes after the new messages
		trimmed := bytes.TrimRight(out, " \t\r\n")
		ws := string(out[len(trimmed):]) // a copy: the append below writes over it
		out = append(append(trimmed, chunk...), ws...)
	}
	return append(out, prev.Doc[closeAt:]...), nil
}

// appendLines is a JSONL request with the lines of chunk added after its last line.
func appendLines(out []byte, chunk string) []byte {
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, chunk...)
}

// requests is where a replay builds its JSONL requests: each one the request sent before
// with the session's new lines appended in place, in spare capacity after it, rather than
// copied (a copy of every request made ctx-replay's work grow with the square of the
// session in bytes moved alone). Appending writes only past the end of the request handed
// out last, which every Transcript read of it leaves alone; and because the request read
// before and the next one share their bytes, comparing a message with its twin of the
// request before (Reparse, measure.OfNext, cachedPrefix) finds them the same memory.
type requests struct {
	buf []byte // the last request handed out; spare capacity after it is ours alone
}

// extend is extend, appending in place when the request sent before is the last one
// handed out (the pipeline sent it unchanged). A request the pipeline changed is memory
// of its own, never written to: it is copied once into a buffer with room to grow.
func (r *requests) extend(prev, orig *transcript.Transcript, chunk string) ([]byte, error) {
	if !orig.Array.IsZero() {
		return extend(prev, orig, chunk) // JSON: the new messages go before the array's end
	}
	need := len(prev.Doc) + 1 + len(chunk)
	mine := len(r.buf) > 0 && len(prev.Doc) == len(r.buf) && unsafe.StringData(prev.Doc) == unsafe.SliceData(r.buf)
	if !mine || cap(r.buf) < need {
		// Room for a quarter more: a session grows by its new lines every request (a
		// generated 10 MB one by 32 KB on average), and a request the pipeline changes
		// (one in five of that session's) is copied anyway.
		out := make([]byte, len(prev.Doc), need+need/4+64<<10)
		copy(out, prev.Doc)
		r.buf = out
	}
	r.buf = appendLines(r.buf, chunk)
	return r.buf, nil
}

// closingBracket is the offset of the "]" that closes the message array (a bare array's
// span may run on over white space after it).
func closingBracket(t *transcript.Transcript) int {
	return strings.LastIndexByte(t.Doc[:t.Array.End-t.Base], ']') + t.Base
}

func countHeaders(t *transcript.Transcript) int {
	n := 0
	for i := range t.Messages {
		if t.Messages[i].Header {
			n++
		}
	}
	return n
}

// readStats reads and empties the stats file: one line per stage that ran.
func (o *Options) readStats() (fired []Firing, set map[string]bool, seen int, err error) {
	if o.StatsFile == "" {
		return nil, nil, 0, nil
	}
	data, err := os.ReadFile(o.StatsFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, err
	}
	if err := os.Truncate(o.StatsFile, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, err
	}
	fired, set, seen = ParseStats(data)
	return fired, set, seen, nil
}

// ParseStats reads the --stats lines the stages of one pipeline run wrote: the stages
// that changed the document, their names as a set, and the size the last stage gave.
// A stage changed the document when it says it changed items, or when it saved tokens: a
// stage whose items count only some of its changes (or a program of another's that
// writes the line) still fired.
func ParseStats(data []byte) (fired []Firing, set map[string]bool, seen int) {
	f := newFirings()
	f.parse(data)
	return f.fired, f.set, f.seen
}

// Firings is ParseStats of what the stages of one run in process did, read from their
// results: a tier's stats as the values they are (no line written and read back), a
// stage that ran as its command by the lines it wrote.
func Firings(results []pipeline.Result) (fired []Firing, set map[string]bool, seen int) {
	f := newFirings()
	for i := range results {
		s := results[i].Stats
		if s == nil {
			f.parse(results[i].Lines)
			continue
		}
		saved := s.Saved
		if saved == 0 { // (as Stats.Marshal writes it)
			saved = s.TokensBefore - s.TokensAfter
		}
		f.add(cmp.Or(s.Tool, results[i].Stage), s.TokensAfter, saved, s.Items, s.Trigger)
	}
	return f.fired, f.set, f.seen
}

// firings gathers what ParseStats and Firings return, a stage at a time.
type firings struct {
	fired []Firing
	set   map[string]bool
	seen  int
}

func newFirings() *firings { return &firings{fired: []Firing{}, set: map[string]bool{}} }

// parse adds each --stats line of data; a line that does not read is skipped.
func (f *firings) parse(data []byte) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var s struct {
			Tool    string `json:"tool"`
			After   int    `json:"tokens_after"`
			Saved   int    `json:"saved"`
			Items   int    `json:"items"`
			Trigger string `json:"trigger"`
		}
		if json.Unmarshal(line, &s) != nil {
			continue
		}
		f.add(s.Tool, s.After, s.Saved, s.Items, s.Trigger)
	}
}

func (f *firings) add(tool string, after, saved, items int, trigger string) {
	f.seen = after
	if items <= 0 && saved <= 0 {
		return
	}
	f.fired = append(f.fired, Firing{Tool: tool, Saved: saved, Items: items, Trigger: trigger})
	// (set, what repeat firings are judged by, holds the stages that made the request
	// smaller: ctx-budget normalizing a new result's spaces changes it and saves nothing)
	if saved > 0 {
		f.set[tool] = true
	}
}
