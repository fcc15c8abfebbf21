package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestCountReusesMessages holds the count of a request made from the last request's counts
// (the new messages read alone) to a count of the whole request, turn by turn, in each API
// format (Responses with its reasoning items, which a later user message makes free), and
// checks that the counts are reused: a request read whole each time would pass the first
// half alone.
func TestCountReusesMessages(t *testing.T) {
	s, _, _ := proxyFor(t, "http://127.0.0.1:1", "", t.TempDir())
	for _, format := range []transcript.Format{transcript.Anthropic, transcript.OpenAI, transcript.Responses} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: string(format), Size: 120_000, Seed: 3, Images: true}); err != nil {
			t.Fatal(err)
		}
		body := buf.String()
		arr := gjson.Get(body, arrayKey(format))
		var msgs []string
		for _, m := range arr.Array() {
			msgs = append(msgs, m.Raw)
		}
		head, tail := body[:arr.Index], body[arr.Index+len(arr.Raw):]
		if format == transcript.Responses && !strings.Contains(body, `"encrypted_content"`) {
			t.Fatal("the Responses document holds no reasoning item to test with")
		}
		c, err := s.Counter(format, "")
		if err != nil {
			t.Fatal(err)
		}
		var prev *convstate.Counts
		reused, edited := 0, 0
		for n := 1; n <= len(msgs); n++ {
			raws := append([]string(nil), msgs[:n]...)
			if n%7 == 0 && n > 4 {
				// A message in the middle changed since (a tier's edit): counted again.
				for _, k := range []string{`"text":"`, `"content":"`, `"output":"`} {
					if m := strings.Replace(raws[n/2], k, k+"edited ", 1); m != raws[n/2] {
						raws[n/2] = m
						edited++
						break
					}
				}
			}
			doc := []byte(head + "[" + strings.Join(raws, ",") + "]" + tail)
			start := len(head)
			got, next := s.count(doc, false, format, "", start, len(doc)-len(tail), raws, prev)
			want := wholeCount(doc, format, c)
			if got != want {
				t.Fatalf("%s, %d messages: %d tokens counted from the last request's, %d whole", format, n, got, want)
			}
			if next == nil {
				t.Fatalf("%s, %d messages: no counts kept", format, n)
			}
			if prev != nil && prev.Final > 0 {
				reused++
			}
			prev = next
		}
		if edited == 0 {
			t.Errorf("%s: no message edited", format)
		}
		if reused < len(msgs)/2 {
			t.Errorf("%s: the counts were reused in %d requests of %d", format, reused, len(msgs))
		}
	}
}

// TestMarkedTurnsNotReadWhole: in a conversation as Claude Code sends it (its marker moved
// to the newest message each turn, its newest prompt a text block then a string), once
// a turn has been counted the request rebuilt on the last one sent is not read whole, and
// what goes out is what was sent last time and the new messages.
func TestMarkedTurnsNotReadWhole(t *testing.T) {
	g := generateAnthropic(t, 200_000, 5)
	s, _, _ := proxyFor(t, "http://127.0.0.1:1", "", t.TempDir())
	s.Log, s.Stats = nil, nil
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	r.Header.Set("X-Claude-Code-Session-Id", "marked")
	start := len(g.msgs) - 12
	last := 0
	for n := start; n <= len(g.msgs); n += 2 {
		before := wholeReads.Load()
		rec, p := s.rewrite(r, transcript.Anthropic, g.marked(n))
		if rec.Fallback != "" || (n > start) != rec.Extended {
			t.Fatalf("%d messages: fallback %q, extended %v", n, rec.Fallback, rec.Extended)
		}
		if n >= start+4 && wholeReads.Load() != before {
			t.Errorf("%d messages: the rebuilt request was read whole", n)
		}
		if n > start && rec.CachedMessages != last {
			t.Errorf("%d messages: %d of the %d messages sent last time sent again", n, rec.CachedMessages, last)
		}
		s.finish(rec, p)
		last = rec.MessagesSent
	}
}

// TestSentCountIsThePipelines: with the default pipeline, what was sent is counted as the
// stages counted it (one count), and that count is the log's own, message by message, and
// the whole request's.
func TestSentCountIsThePipelines(t *testing.T) {
	g := generateAnthropic(t, 200_000, 5)
	for _, same := range []bool{true, false} {
		s, _, _ := proxyFor(t, "http://127.0.0.1:1", replay.DefaultPipe, t.TempDir())
		s.Log, s.Stats = nil, nil
		if same {
			countAsStages(t, s) // as in ctx-proxy (its Context's counters)
		}
		sentCounts(t, s, g, same)
	}
}

// TestReceivedCountIsThePipelines: with the default pipeline, a request piped as it came
// (a conversation's first) is counted as the stages counted their input (no count of its
// own), and that count is the log's own, message by message, and the whole request's;
// with another counter than the stages', the log counts it itself.
func TestReceivedCountIsThePipelines(t *testing.T) {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: 200_000, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()
	for _, same := range []bool{true, false} {
		s, _, _ := proxyFor(t, "http://127.0.0.1:1", replay.DefaultPipe, t.TempDir())
		s.Log, s.Stats = nil, nil
		if same {
			countAsStages(t, s)
		}
		c, err := s.Counter(transcript.Anthropic, "")
		if err != nil {
			t.Fatal(err)
		}
		whole := wholeCount(body, transcript.Anthropic, c)
		for i := 0; i < 2; i++ {
			r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
			r.Header.Set("X-Claude-Code-Session-Id", fmt.Sprintf("received-%v-%d", same, i))
			rec, p := s.rewrite(r, transcript.Anthropic, body)
			if rec.Fallback != "" || rec.Extended {
				t.Fatalf("fallback %q, extended %v", rec.Fallback, rec.Extended)
			}
			total, got, ok := s.countOf(p.origT, p.origTally, p.model, p.origMsgs)
			if ok != same {
				t.Fatalf("counter the stages' %v: the pipeline's count of what came in used %v", same, ok)
			}
			if ok {
				_, want := s.count(p.orig, true, p.format, p.model, p.origAt[0], p.origAt[1], p.origMsgs, nil)
				if want == nil || total != whole || !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Flags, want.Flags) || got.Final != want.Final {
					t.Fatalf("the pipeline's count of what came in (total %d, whole %d) is not the log's own:\n%v %v %d\n%v %v %d", total, whole, got.Tokens, got.Flags, got.Final, want.Tokens, want.Flags, want.Final)
				}
			}
			s.finish(rec, p)
			if rec.TokensIn != whole {
				t.Fatalf("%d tokens received logged, %d counted whole", rec.TokensIn, whole)
			}
		}
	}
}

// sentCounts runs the conversation g's last turns through s, holding what was sent to a
// count of the whole request; used says the pipeline's counts must have been used.
func sentCounts(t *testing.T, s *Server, g generated, used bool) {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	r.Header.Set("X-Claude-Code-Session-Id", "sent-count")
	c, err := s.Counter(transcript.Anthropic, "")
	if err != nil {
		t.Fatal(err)
	}
	n0 := 0
	for n := len(g.msgs) - 10; n <= len(g.msgs); n += 2 {
		rec, p := s.rewrite(r, transcript.Anthropic, g.marked(n))
		if rec.Fallback != "" {
			t.Fatalf("%d messages: fallback %q", n, rec.Fallback)
		}
		total, got, ok := s.countOf(p.sentT, p.sentTally, p.model, p.sentMsgs)
		if ok {
			n0++
			_, want := s.count(p.sent, false, p.format, p.model, p.sentAt[0], p.sentAt[1], p.sentMsgs, nil)
			if !ok || want == nil || total != wholeCount(p.sent, transcript.Anthropic, c) || !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Flags, want.Flags) || got.Final != want.Final {
				t.Fatalf("%d messages: the pipeline's count (%v, total %d, whole %d) is not the log's own:\n%v %v %d\n%v %v %d", n, ok, total, wholeCount(p.sent, transcript.Anthropic, c), got.Tokens, got.Flags, got.Final, want.Tokens, want.Flags, want.Final)
			}
		}
		// The markers of what goes out, those of the messages the tiers left as they
		// came taken from the request piped in, are all its markers.
		markers := countMarkers(gjson.GetBytes(p.sent, "system")) + countMarkers(gjson.GetBytes(p.sent, "tools"))
		for _, m := range gjson.GetBytes(p.sent, "messages").Array() {
			markers += countMarkers(m.Get("content"))
		}
		s.finish(rec, p)
		if rec.Markers != markers {
			t.Fatalf("%d messages: %d markers sent, %d in the body", n, rec.Markers, markers)
		}
		if want := wholeCount(p.sent, transcript.Anthropic, c); rec.TokensSent != want {
			t.Fatalf("%d messages: %d tokens sent logged, %d counted whole", n, rec.TokensSent, want)
		}
	}
	if used != (n0 > 0) {
		t.Errorf("the pipeline's counts used in %d requests, want used %v", n0, used)
	}
}

// TestCacheTTLFromTheLastBody holds the cache lifetime read from the last body's messages
// (the same strings not read again) to one read from the whole body, turn by turn, as
// markers with and without a ttl come and go in the messages and the system prompt; and
// checks that messages are taken from the last body.
func TestCacheTTLFromTheLastBody(t *testing.T) {
	g := generateAnthropic(t, 60_000, 7)
	ttl := func(raw, d string) string {
		m, _ := sjson.SetRaw(raw, "content", `[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"`+d+`"}}]`)
		return m
	}
	var last []string
	var memo clientMemo
	taken, nonzero := 0, 0
	for n := 4; n <= len(g.msgs); n++ {
		msgs := append([]string(nil), g.msgs[:n]...)
		head := g.head
		switch n % 5 {
		case 1:
			msgs[n-1] = ttl(msgs[n-1], "1h")
		case 2:
			msgs[n/2] = ttl(msgs[n/2], "5m")
		case 3:
			head = strings.Replace(head, `"system":`, `"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],"x_system":`, 1)
		}
		doc := []byte(head + "[" + strings.Join(msgs, ",") + "]" + g.tail)
		sc, ok := scanBody(doc, transcript.Anthropic, func(string) [][]string { return [][]string{last} })
		if !ok {
			t.Fatalf("%d messages: the body does not scan", n)
		}
		c := &clientBody{format: transcript.Anthropic, body: doc, msgs: sc.msgs, lastMsgs: memo.lastMsgs, lastTTLs: memo.lastTTLs}
		got, want := c.cacheTTL(sc.top), cacheTTL(doc)
		if got != want {
			t.Fatalf("%d messages: cache lifetime %v read from the last body, %v from the whole", n, got, want)
		}
		if want > 0 {
			nonzero++
		}
		taken += sc.known
		memo = clientMemo{lastMsgs: c.lastMsgs, lastTTLs: c.lastTTLs}
		last = c.lastMsgs
	}
	if nonzero < 5 || taken == 0 {
		t.Errorf("%d bodies asked for a lifetime, %d messages taken from the last body: the test tests nothing", nonzero, taken)
	}
}

// TestAlikeWithoutTheClientsBody: with the default pipeline, once a conversation's
// messages have been found alike the client's, a turn holds what it sends to the client's
// body without parsing that body; and a message of the state changed where ctx-repair's
// rules look (a call's id), though well formed, is not taken for the one found alike: the
// rebuilt request is refused.
func TestAlikeWithoutTheClientsBody(t *testing.T) {
	g := generateAnthropic(t, 200_000, 5)
	s, _, _ := proxyFor(t, "http://127.0.0.1:1", replay.DefaultPipe, t.TempDir())
	s.Log, s.Stats = nil, nil
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	r.Header.Set("X-Claude-Code-Session-Id", "alike")
	start := len(g.msgs) - 16
	for n := start; n <= len(g.msgs)-4; n += 2 {
		before := clientReads.Load()
		rec, p := s.rewrite(r, transcript.Anthropic, g.marked(n))
		if rec.Fallback != "" || (n > start) != rec.Extended {
			t.Fatalf("%d messages: fallback %q, extended %v", n, rec.Fallback, rec.Extended)
		}
		if n >= start+4 && clientReads.Load() != before {
			t.Errorf("%d messages: the client's body was parsed", n)
		}
		s.finish(rec, p)
	}
	// A call's id changed in the state: its result answers nothing.
	key := rewriteKey(t, s, r, g.marked(len(g.msgs)-2))
	st, err := s.State.Get(key)
	if err != nil || st == nil {
		t.Fatalf("no state: %v", err)
	}
	damaged := *st
	damaged.Sent = append([]string(nil), st.Sent...)
	changed := false
	for i, m := range damaged.Sent {
		if id := gjson.Get(m, `content.#(type=="tool_use").id`); id.Exists() && i < len(damaged.Sent)-4 {
			damaged.Sent[i] = strings.Replace(m, id.Raw, `"toolu_changed"`, 1)
			changed = true
			break
		}
	}
	if !changed {
		t.Fatal("no tool call in the state to change")
	}
	s.State.Keep(&damaged)
	rec, p := s.rewrite(r, transcript.Anthropic, g.marked(len(g.msgs)-2))
	s.finish(rec, p)
	if !strings.HasPrefix(rec.Fallback, "state: the rebuilt request fails ctx-repair --check") || rec.Extended {
		t.Errorf("a state with a call's id changed: fallback %q, extended %v", rec.Fallback, rec.Extended)
	}
}

// rewriteKey is the conversation key s gives body.
func rewriteKey(t *testing.T, s *Server, r *http.Request, body []byte) string {
	t.Helper()
	sc, ok := scanBody(body, transcript.Anthropic, nil)
	if !ok {
		t.Fatal("the body does not scan")
	}
	return conversationKey(r, sc.top, transcript.Anthropic, sc.msgs)
}

// cacheTTL, the reference clientBody.cacheTTL is held to, is the longest cache lifetime a Messages API body's cache_control markers ask
// for ("ttl": "5m" or "1h"), 0 when none names one.
func cacheTTL(body []byte) time.Duration {
	if !bytes.Contains(body, []byte(`"ttl"`)) {
		return 0
	}
	doc := gjson.ParseBytes(body)
	longest := max(blocksTTL(doc.Get("system")), blocksTTL(doc.Get("tools")))
	doc.Get("messages").ForEach(func(_, m gjson.Result) bool {
		longest = max(longest, messageTTL(m.Raw))
		return true
	})
	return longest
}
