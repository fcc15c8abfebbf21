package proxy

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// scanSeeds are bodies and, for each, the body of a request before it whose messages the
// quick reading compares with.
var scanSeeds = [][2]string{
	{`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"system":"s"}`,
		`{"model":"m","messages":[{"role":"user","content":"a"}]}`},
	{` { "messages" : [ {"role":"user","content":"a \" ] } \\"} , {"role":"assistant","content":[{"type":"text","text":"x"}]} ] , "tools":[{"name":"t","cache_control":{"type":"ephemeral"}}] } `,
		`{"messages":[{"role":"user","content":"a \" ] } \\"}]}`},
	{`{"messages":[1,2,3]}`, `{"messages":[1,2]}`},
	{`{"messages":[12,3]}`, `{"messages":[1,2]}`},
	{`{"messages":[{"a":1}x]}`, `{"messages":[{"a":1}]}`},
	{`{"messages":[{"a":1},{"b":]}`, `{"messages":[{"a":1}]}`},
	{`{"messages":[{"a":1}],"messages":[]}`, `{"messages":[{"a":1}]}`},
	{`{"mess\u0061ges":[{"a":1}]}`, `{"messages":[{"a":1}]}`},
	{`{"messages":[{"a":1}]} x`, `{"messages":[{"a":1}]}`},
	{`{"messages":"hi"}`, ``},
	{`{"messages":[]}`, `{"messages":[{"a":1}]}`},
	{`{"messages":[{"a":1},{"a":1}],"metadata":{"user_id":"u"},"prompt_cache_key":"k","instructions":"i"}`, `{"messages":[{"a":1},{"a":1}]}`},
	{`{"messages":[{"a":1}, {"a":2} ,{"a":3}]}`, `{"messages":[{"a":1},{"a":2}]}`},
	{`{"messages":[{"a":1},{"a":2}],}`, `{"messages":[{"a":1}]}`},
	{`{"messages":[{"a":"\"}"},{"b":tru}]}`, ``},
	{`{"input":[{"type":"message"}],"messages":[1]}`, `{"input":[{"type":"message"}]}`},
	{`{"messages":[{"a":1}],"max_tokens":-1.5e3,"stream":true,"x":null}`, `{"messages":[{"a":1}]}`},
}

// checkScan holds the quick reading of body, against the messages of prev, to the slow one:
// it may decline a body, never read one otherwise.
func checkScan(t *testing.T, body, prev string, format transcript.Format) {
	t.Helper()
	var kept []string
	if p, ok := slowScan([]byte(prev), format); ok {
		for _, m := range p.msgs {
			kept = append(kept, m.Raw)
		}
	}
	recent := func(first string) [][]string {
		if len(kept) > 0 && kept[0] == first {
			return [][]string{{first, "other"}, kept}
		}
		return nil
	}
	slow, sok := slowScan([]byte(body), format)
	quick, qok := quickScan([]byte(body), arrayKey(format), recent)
	if !qok {
		return
	}
	if !sok {
		t.Fatalf("quick reading took %q, gjson does not", body)
	}
	if quick.start != slow.start || quick.end != slow.end || len(quick.msgs) != len(slow.msgs) {
		t.Fatalf("%q: array [%d,%d) of %d messages, gjson [%d,%d) of %d", body, quick.start, quick.end, len(quick.msgs), slow.start, slow.end, len(slow.msgs))
	}
	for i := range quick.msgs {
		if quick.msgs[i].Raw != slow.msgs[i].Raw || quick.msgs[i].Type != slow.msgs[i].Type {
			t.Fatalf("%q: message %d %q, gjson %q", body, i, quick.msgs[i].Raw, slow.msgs[i].Raw)
		}
	}
	q, s := quick.top, slow.top
	if q.system != s.system || q.cacheKey != s.cacheKey || q.user != s.user || q.model != s.model || q.markers != s.markers ||
		q.tools != s.tools || q.prompt[0].Raw != s.prompt[0].Raw || q.prompt[1].Raw != s.prompt[1].Raw {
		t.Fatalf("%q: top %+v, gjson %+v", body, q, s)
	}
	for i := 0; i < quick.known; i++ {
		if i >= len(kept) || quick.msgs[i].Raw != kept[i] {
			t.Fatalf("%q: message %d taken as known, not the one kept", body, i)
		}
	}
}

func TestQuickScanReadsAsGjson(t *testing.T) {
	for _, c := range scanSeeds {
		checkScan(t, c[0], c[1], transcript.Anthropic)
	}
	// The quick reading takes the bodies it should, and compares the kept messages.
	for _, c := range []struct {
		body, prev string
		known      int
	}{
		{scanSeeds[0][0], scanSeeds[0][1], 1},
		{scanSeeds[1][0], scanSeeds[1][1], 1},
		{scanSeeds[2][0], scanSeeds[2][1], 2},
		{scanSeeds[3][0], scanSeeds[3][1], 0},
		{scanSeeds[12][0], scanSeeds[12][1], 2},
	} {
		kept := []string{}
		p, _ := slowScan([]byte(c.prev), transcript.Anthropic)
		for _, m := range p.msgs {
			kept = append(kept, m.Raw)
		}
		sc, ok := quickScan([]byte(c.body), "messages", func(string) [][]string { return [][]string{kept} })
		if !ok || sc.known != c.known {
			t.Errorf("%q: ok %v, %d known, want %d", c.body, ok, sc.known, c.known)
		}
	}
	for _, bad := range []string{scanSeeds[4][0], scanSeeds[5][0], scanSeeds[6][0], scanSeeds[8][0], scanSeeds[13][0], scanSeeds[14][0]} {
		if _, ok := quickScan([]byte(bad), "messages", nil); ok {
			t.Errorf("quick reading took %q", bad)
		}
	}
}

func FuzzQuickScan(f *testing.F) {
	for _, c := range scanSeeds {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, body, prev string) {
		if strings.Contains(body, "input") {
			checkScan(t, body, prev, transcript.Responses)
		}
		checkScan(t, body, prev, transcript.Anthropic)
	})
}

// TestSameReading holds sameReading to what it stands for: two forms it takes as one read
// as one by transcript.Parse, ctx-repair and malformed, in a request of either.
func TestSameReading(t *testing.T) {
	marker := `,"cache_control":{"type":"ephemeral"}`
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi"` + marker + `}]}`, true},
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi"}]}`, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"` + marker + `}]}`, true},
		{`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"x","input":{}` + marker + `}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"x","input":{}}]}`, true},
		{`{"role":"user","content":""}`, `{"role":"user","content":[{"type":"text","text":""}]}`, false},
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"input_text","text":"hi"}]}`, false},
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":"ho"}`, false},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"` + marker + `}]}`, false},
	} {
		if got := sameReading(c.a, c.b); got != c.same {
			t.Errorf("sameReading(%s, %s) = %v", c.a, c.b, got)
			continue
		}
		if !c.same {
			continue
		}
		// In a request around them, each form reads the same.
		for _, around := range [][2]string{
			{`{"role":"user","content":"start"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},`, ``},
			{``, `,{"role":"assistant","content":"end"}`},
			{`{"role":"user","content":"start"},`, ``},
		} {
			read := func(m string) (string, error) {
				body := []byte(`{"model":"m","messages":[` + around[0] + m + around[1] + `]}`)
				tr, err := transcript.Parse(body, transcript.Options{Format: transcript.Anthropic})
				if err != nil {
					return "", err
				}
				return fmt.Sprint(repair.Counts(repair.Check(tr)), malformed(transcript.Anthropic, gjson.Parse(m))), nil
			}
			ra, ea := read(c.a)
			rb, eb := read(c.b)
			if ra != rb || (ea == nil) != (eb == nil) {
				t.Errorf("%s and %s read differently in %q: %s (%v), %s (%v)", c.a, c.b, around, ra, ea, rb, eb)
			}
		}
	}
}

// FuzzCanonicalReadsFirstBlock holds canonical, which stops at a first block typed other
// than text, to the form it had when it read every message's content whole: the hashes of
// a state written before must still match.
func FuzzCanonicalReadsFirstBlock(f *testing.F) {
	for _, m := range []string{
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]}`,
		`{"role":"user","content":[{"text":"say \"type"}]}`,
		`{"role":"user","content":[{"type":1,"text":"a"}]}`,
		`{"role":"user","content":[{"type":"text","type":"x","text":"a"}]}`,
		`{"role":"user","content":{"0":{"type":"x"}}}`,
		`{"role":"user","content":"plain"}`,
		`{"role":"user","content":[{"type":"input_text","text":"a","cache_control":{"type":"ephemeral"}}]}`,
	} {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m string) {
		if !gjson.Valid(m) {
			return
		}
		if got, want := canonical(m), folded(unmarked(m)); got != want {
			t.Fatalf("canonical(%s) = %s, read whole %s", m, got, want)
		}
	})
}

// TestQuickScanChoosesConversation: of the requests kept that open with the same first
// message (sessions of one client), the body is read against the one it goes on.
func TestQuickScanChoosesConversation(t *testing.T) {
	a, b1, b2, c := `{"role":"user","content":"a"}`, `{"role":"assistant","content":"b1"}`, `{"role":"assistant","content":"b2"}`, `{"role":"user","content":"c"}`
	body := []byte(`{"messages":[` + a + "," + b2 + "," + c + `]}`)
	sc, ok := quickScan(body, "messages", func(string) [][]string { return [][]string{{a, b1}, {a, b2}} })
	if !ok || sc.known != 2 {
		t.Errorf("ok %v, %d messages known, want 2", ok, sc.known)
	}
}

// TestHasMarker: hasMarker finds the key wherever it is, and nothing else.
func TestHasMarker(t *testing.T) {
	for s, want := range map[string]bool{
		`"cache_control"`:                       true,
		`{"a":"x_control\"","cache_control":1}`: true,
		`{"text":"_control\""}`:                 false,
		`cache_control"`:                        false,
		`"cache_controls"`:                      false,
		`_control"`:                             false,
		``:                                      false,
		`"cache_contro`:                         false,
	} {
		if got := hasMarker(s); got != want || got != strings.Contains(s, `"cache_control"`) {
			t.Errorf("hasMarker(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestScanKeepsNoBody: the messages quickScan reads that are not a kept request's are
// copies, never views of the body: the state keeps them, and a later request that repeats
// only some of them must not keep the rest (nor the body) alive.
func TestScanKeepsNoBody(t *testing.T) {
	for _, seed := range scanSeeds {
		var kept []string
		if p, ok := slowScan([]byte(seed[1]), transcript.Anthropic); ok {
			for _, m := range p.msgs {
				kept = append(kept, m.Raw)
			}
		}
		for _, recent := range []func(string) [][]string{nil, func(string) [][]string { return [][]string{kept} }} {
			body := []byte(seed[0])
			sc, ok := quickScan(body, "messages", recent)
			if !ok {
				continue
			}
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
			hi := lo + uintptr(len(body))
			for i, m := range sc.msgs[sc.known:] {
				i += sc.known
				p := uintptr(unsafe.Pointer(unsafe.StringData(m.Raw)))
				if lo <= p && p < hi {
					t.Errorf("%s: message %d is a view of the body", seed[0], i)
				}
			}
		}
	}
}
