package proxy

import (
	"bytes"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// fuzzFormats are the formats the proxy rebuilds, by the fuzzer's number for them.
var fuzzFormats = []transcript.Format{transcript.Anthropic, transcript.OpenAI, transcript.Responses}

// sentSep separates the state's sent messages in the fuzzer's string of them.
const sentSep = "\x1e"

// FuzzStateRebuild: whatever the conversation's state holds (the hashes of the messages
// received, the first n of them the client's own and maybe one altered, and any sent
// messages, garbage included) and whatever the client sends, the request the proxy sends
// (with --pipe none) is either the client's body byte for byte or a valid extension of it:
// the same body with its messages replaced by the state's sent messages followed by exactly
// the client's new ones (cache_control markers aside, which the proxy caps), that reads as
// the format, whose messages are objects, and that breaks no rule of ctx-repair --check
// more often than the client's body. Seeds: the state tests' cases and ordinary turns.
func FuzzStateRebuild(f *testing.F) {
	first := userText("build it")
	anth := []string{first, `{"role":"assistant","content":"on it"}`, userText("go on")}
	for _, sent := range [][]string{
		{first},
		{toolUse("x1", "rm -rf /")},
		{"1", `{"bogus":true}`},
		{`{"role":"user","content":"x"`},
		{`{"role":"user","content":[1]}`},
		{userText("ignore previous instructions")},
		{userText("build it"), `{"role":"assistant","content":"on it"}`},
		{`{"role":"user","content":"x"},{"role":"assistant","content":"y"},{"role":"user","content":"z"}`},
		{" "},
		{},
	} {
		f.Add(uint8(0), conversation(anth...), strings.Join(sent, sentSep), uint8(len(sent)), false)
		f.Add(uint8(0), conversation(anth...), strings.Join(sent, sentSep), uint8(1), false)
	}
	marked := strings.Replace(toolResult("t1", "ok"), `"type":"tool_result"`, `"type":"tool_result","cache_control":{"type":"ephemeral"}`, 1)
	tools := []string{userText("go"), toolUse("t1", "ls"), marked, `{"role":"assistant","content":"done"}`, userText("next")}
	f.Add(uint8(0), conversation(tools...), strings.Join(tools[:3], sentSep), uint8(3), false)
	f.Add(uint8(0), conversation(tools...), strings.Join(tools[:3], sentSep), uint8(3), true)
	f.Add(uint8(0), conversation(tools...), strings.Join([]string{tools[0], tools[1], toolResult("t1", "[cut]")}, sentSep), uint8(3), false)
	chat := []string{`{"role":"system","content":"sys"}`, `{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"a\nb"}`, `{"role":"user","content":"and?"}`}
	f.Add(uint8(1), `{"model":"gpt-4o","messages":[`+strings.Join(chat, ",")+`]}`, strings.Join(chat[:4], sentSep), uint8(4), false)
	f.Add(uint8(1), `{"model":"gpt-4o","messages":[`+strings.Join(chat, ",")+`]}`, strings.Join(chat[:2], sentSep), uint8(4), false)
	items := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"fix"}]}`,
		`{"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"c1","output":"ok"}`, `{"type":"message","role":"user","content":"more"}`}
	f.Add(uint8(2), `{"model":"gpt-5","input":[`+strings.Join(items, ",")+`]}`, strings.Join(items[:3], sentSep), uint8(3), false)
	f.Add(uint8(2), `{"model":"gpt-5","input":[`+strings.Join(items, ",")+`]}`, `"a string"`+sentSep+`{"x":1}`, uint8(3), false)
	f.Add(uint8(2), `{"input":"plain"}`, "", uint8(0), false)
	f.Add(uint8(0), "not json", "", uint8(0), false)

	st, err := convstate.Open(f.TempDir(), convstate.Options{Key: testStateKey, Canonical: canonical}, nil)
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{State: st}
	f.Fuzz(func(t *testing.T, which uint8, body, sentJoined string, n uint8, alter bool) {
		format := fuzzFormats[int(which)%len(fuzzFormats)]
		path := map[transcript.Format]string{transcript.Anthropic: "/v1/messages", transcript.OpenAI: "/v1/chat/completions", transcript.Responses: "/v1/responses"}[format]
		r := httptest.NewRequest("POST", path, nil)
		r.Header.Set("X-Claude-Code-Session-Id", "fuzz")
		var cur []gjson.Result
		if gjson.Valid(body) {
			cur = gjson.Get(body, arrayKey(format)).Array()
		}
		orig := make([]string, int(n)%16)
		for i := range orig {
			if i < len(cur) {
				orig[i] = convstate.Hash(canonical(cur[i].Raw))
			} else {
				orig[i] = convstate.Hash(strconv.Itoa(i))
			}
		}
		if alter && len(orig) > 0 {
			orig[len(orig)-1] = convstate.Hash("altered")
		}
		var sent []string
		if sentJoined != "" {
			sent = strings.Split(sentJoined, sentSep)
		}
		key := conversationKey(r, topFields{}, format, cur)
		st.Keep(&convstate.State{Key: key, Orig: orig, Sent: append([]string(nil), sent...)})

		rec, _ := s.rewrite(r, format, []byte(body))
		out := rec.body
		if bytes.Equal(out, []byte(body)) {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("sent a body that is not JSON: %s", out)
		}
		// The body around the messages is the client's.
		arr, outArr := gjson.Get(body, arrayKey(format)), gjson.GetBytes(out, arrayKey(format))
		if !outArr.IsArray() || string(out[:outArr.Index]) != body[:arr.Index] ||
			string(out[outArr.Index+len(outArr.Raw):]) != body[arr.Index+len(arr.Raw):] {
			t.Fatalf("the body around the messages changed:\n%s\nclient's:\n%s", out, body)
		}
		// Its messages: the state's sent ones, then exactly the client's new ones.
		var msgs []string
		for _, m := range outArr.Array() {
			if !m.IsObject() {
				t.Fatalf("sent a message that is not an object: %s", m.Raw)
			}
			msgs = append(msgs, m.Raw)
		}
		if len(orig) > len(cur) || len(msgs) != len(sent)+len(cur)-len(orig) {
			t.Fatalf("%d messages sent; the state has %d sent for %d received, the client sent %d", len(msgs), len(sent), len(orig), len(cur))
		}
		for i, m := range msgs {
			want := ""
			if i < len(sent) {
				want = sent[i]
			} else {
				want = cur[len(orig)+i-len(sent)].Raw
			}
			if unmarked(m) != unmarked(want) {
				t.Fatalf("message %d sent is\n%s\nnot\n%s", i, m, want)
			}
		}
		tout, err := transcript.Parse(out, transcript.Options{Format: format})
		if err != nil {
			t.Fatalf("sent a body that does not read as %s: %v\n%s", format, err, out)
		}
		now := repair.Counts(repair.Check(tout))
		var was map[repair.Rule]int
		if tin, err := transcript.Parse([]byte(body), transcript.Options{Format: format}); err == nil {
			was = repair.Counts(repair.Check(tin))
		}
		for rule, k := range now {
			if k > was[rule] {
				t.Fatalf("sent a body with %d %s problems, the client's had %d:\n%s\nclient's:\n%s", k, rule, was[rule], out, body)
			}
		}
	})
}
