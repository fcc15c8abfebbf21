package persist

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// big is a tool output of n lines.
func big(tag string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s line %d: some output of the tool, long enough to count\n", tag, i)
	}
	return b.String()
}

// anthropicDoc is a request with one call and result per content, then a reply and a
// newest user message.
func anthropicDoc(contents ...any) string {
	msgs := []any{map[string]any{"role": "user", "content": "start"}}
	for i, c := range contents {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"n": i}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": c}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "done"}, map[string]any{"role": "user", "content": "thanks"})
	return mustJSON(map[string]any{"system": "be brief", "messages": msgs})
}

func openaiDoc(contents ...any) string {
	msgs := []any{map[string]any{"role": "system", "content": "be brief"}, map[string]any{"role": "user", "content": "start"}}
	for i, c := range contents {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": c})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "done"}, map[string]any{"role": "user", "content": "thanks"})
	return mustJSON(map[string]any{"messages": msgs})
}

func responsesDoc(outputs ...string) string {
	items := []any{map[string]any{"type": "message", "role": "user", "content": "start"}}
	for i, out := range outputs {
		id := fmt.Sprintf("call_%d", i)
		items = append(items,
			map[string]any{"type": "function_call", "name": "shell", "arguments": "{}", "call_id": id},
			map[string]any{"type": "function_call_output", "call_id": id, "output": out})
	}
	items = append(items, map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "done"}}})
	return mustJSON(map[string]any{"input": items})
}

func claudeCodeDoc(outputs ...string) string {
	var lines []string
	parent := any(nil)
	n := 0
	add := func(typ string, msg any) {
		n++
		uuid := fmt.Sprintf("u%03d", n)
		lines = append(lines, mustJSON(map[string]any{"type": typ, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
			"sessionId": "s", "timestamp": fmt.Sprintf("2026-03-04T05:%02d:00Z", n), "message": msg}))
		parent = uuid
	}
	add("user", map[string]any{"role": "user", "content": "start"})
	for i, out := range outputs {
		id := fmt.Sprintf("toolu_%d", i)
		add("assistant", map[string]any{"id": fmt.Sprintf("msg_%d", i), "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}})
		add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out}}})
	}
	add("assistant", map[string]any{"id": "msg_end", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "done"}}})
	add("user", map[string]any{"role": "user", "content": "thanks"})
	return strings.Join(lines, "\n") + "\n"
}

func codexDoc(outputs ...string) string {
	var lines []string
	add := func(typ string, payload any) {
		lines = append(lines, mustJSON(map[string]any{"timestamp": "2026-03-04T05:20:12.601Z", "type": typ, "payload": payload}))
	}
	add("session_meta", map[string]any{"id": "x", "instructions": "be brief"})
	add("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "start"}}})
	for i, out := range outputs {
		id := fmt.Sprintf("call_%d", i)
		add("response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["ls"]}`, "call_id": id})
		wrapped := mustJSON(map[string]any{"output": out, "metadata": map[string]any{"exit_code": 0, "duration_seconds": 0.5}})
		add("response_item", map[string]any{"type": "function_call_output", "call_id": id, "output": wrapped})
	}
	add("response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "done"}}})
	return strings.Join(lines, "\n") + "\n"
}

func parse(t *testing.T, doc string) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{Sidechains: true})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, doc)
	}
	return tr
}

func testOptions(threshold int) Options {
	o := Defaults()
	o.Threshold, o.Store = threshold, "/st"
	return o
}

// memStore is a store in a map, for the pure functions.
type memStore map[string]string

func (m memStore) put(blobs []Blob) {
	for _, b := range blobs {
		m[b.Hash] = b.Data
		if b.RawHash != "" {
			m[b.RawHash] = b.RawData
		}
	}
}

func (m memStore) get(h string) ([]byte, error) {
	if !store.ValidHash(h) {
		return nil, store.ErrBadHash
	}
	d, ok := m[h]
	if !ok {
		return nil, store.ErrNotFound
	}
	if store.Hash([]byte(d)) != h {
		return nil, store.ErrCorrupt
	}
	return []byte(d), nil
}

// persist runs Plan and returns the output, checking that every reference it made can be
// restored to the input.
func persist(t *testing.T, doc string, o Options, m memStore) (string, []Blob, Stats) {
	t.Helper()
	tr := parse(t, doc)
	edits, blobs, st := Plan(tr, o)
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	m.put(blobs)
	back := restore(t, string(out), m)
	if back != doc {
		t.Fatalf("restore does not give the input back: first difference at byte %d", firstDiff(back, doc))
	}
	return string(out), blobs, st
}

func restore(t *testing.T, doc string, m memStore) string {
	t.Helper()
	tr := parse(t, doc)
	edits, _, err := Restore(tr, m.get)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func firstDiff(a, b string) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// resultTexts lists the decoded text of every tool result (parts joined by "|").
func resultTexts(t *testing.T, doc string) []string {
	t.Helper()
	tr := parse(t, doc)
	var out []string
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if b.Kind != transcript.ToolResult {
				continue
			}
			var ps []string
			for _, u := range units(tr, b) {
				ps = append(ps, u.text)
			}
			out = append(out, strings.Join(ps, "|"))
		}
	}
	return out
}

func TestPlanFormats(t *testing.T) {
	small, large := "short output\n", big("x", 800) // 13 B and ~45 KB
	for _, c := range []struct {
		name string
		doc  string
	}{
		{"anthropic", anthropicDoc(small, large, "last")},
		{"openai", openaiDoc(small, large, "last")},
		{"responses", responsesDoc(small, large, "last")},
		{"claude-code", claudeCodeDoc(small, large, "last")},
		{"codex", codexDoc(small, large, "last")},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := memStore{}
			out, blobs, st := persist(t, c.doc, testOptions(30_000), m)
			if len(blobs) != 1 || st.Texts != 1 || st.Offloaded != 1 || st.Results != 3 {
				t.Fatalf("%d blobs, stats %+v", len(blobs), st)
			}
			b := blobs[0]
			if b.Data != large || b.Hash != store.Hash([]byte(large)) || b.RawHash != "" {
				t.Errorf("blob holds %d bytes, hash %s, raw %q", len(b.Data), b.Hash, b.RawHash)
			}
			if b.Meta.Bytes != len(large) || b.Meta.Lines != 800 || b.Meta.Tokens != tokens.Estimate(large) || b.Meta.Tool == "" || b.Meta.ToolCallID == "" {
				t.Errorf("meta %+v", b.Meta)
			}
			texts := resultTexts(t, out)
			if texts[0] != small || texts[2] != "last" {
				t.Errorf("small results changed: %q", texts)
			}
			marker, ok := markerLine(texts[1])
			if !ok {
				t.Fatalf("no marker in %q", human.Clip(texts[1], 300))
			}
			preview := strings.TrimSuffix(texts[1], marker)
			if !strings.HasPrefix(large, preview) || len(preview) > 2000 || len(preview) < 1000 || !strings.HasSuffix(preview, "\n") {
				t.Errorf("preview of %d bytes: %q", len(preview), human.Clip(preview, 100))
			}
			path := filepath.Join("/st", b.Hash[:2], b.Hash)
			want := fmt.Sprintf("[ctx-persist: tool result stored in full (%d bytes, 800 lines, ~%d tokens); above are its first %d bytes. Read it all with a file tool or: cat %s (or ctx-recall --outline/--read with that path)]",
				len(large), tokens.Estimate(large), len(preview), path)
			if marker != want {
				t.Errorf("marker\n got %s\nwant %s", marker, want)
			}
			// Once is enough: a second run recognises its references.
			tr := parse(t, out)
			edits, blobs2, st2 := Plan(tr, testOptions(1000))
			if len(edits) != 0 || len(blobs2) != 0 || st2.Already != 1 {
				t.Errorf("second run: %d edits, stats %+v", len(edits), st2)
			}
			if st.TokensDelta >= 0 {
				t.Errorf("tokens delta %d", st.TokensDelta)
			}
		})
	}
}

func TestPlanBelowThreshold(t *testing.T) {
	doc := anthropicDoc(big("a", 100), big("b", 100), "last")
	tr := parse(t, doc)
	edits, blobs, st := Plan(tr, testOptions(30_000))
	if len(edits) != 0 || len(blobs) != 0 || st.Offloaded != 0 || !strings.Contains(st.Trigger, "no tool result above 30000 bytes") {
		t.Errorf("below the threshold: %d edits, %+v", len(edits), st)
	}
	// The threshold is "above": a result of exactly the threshold stays.
	n := len(big("a", 100))
	if edits, _, _ := Plan(tr, testOptions(n)); len(edits) != 0 {
		t.Errorf("a result of exactly the threshold was offloaded")
	}
	if edits, _, _ := Plan(tr, testOptions(n-1)); len(edits) != 2 {
		t.Errorf("%d results offloaded one byte above the threshold", len(edits))
	}
}

func TestPlanProtected(t *testing.T) {
	// The newest user message holds the big result: no tier may alter it.
	doc := mustJSON(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "start"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": big("x", 800)}}},
	}})
	tr := parse(t, doc)
	edits, _, st := Plan(tr, testOptions(1000))
	if len(edits) != 0 || st.Protected != 1 {
		t.Errorf("newest user message altered: %d edits, %+v", len(edits), st)
	}
}

func TestPlanParts(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	parts := []any{
		map[string]any{"type": "text", "text": big("one", 400)},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}},
		map[string]any{"type": "text", "text": big("two", 400)},
		map[string]any{"type": "text", "text": "tiny"},
	}
	m := memStore{}
	out, blobs, st := persist(t, anthropicDoc(parts, "last"), testOptions(30_000), m)
	if len(blobs) != 2 || st.Texts != 2 || st.Offloaded != 1 {
		t.Fatalf("%d blobs, %+v", len(blobs), st)
	}
	if !strings.Contains(out, png) || !strings.Contains(out, `"text":"tiny"`) {
		t.Error("the image or the small text part changed")
	}
	// OpenAI list content too.
	oparts := []any{map[string]any{"type": "text", "text": big("p", 800)}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + png}}}
	if _, blobs, _ := persist(t, openaiDoc(oparts, "last"), testOptions(30_000), m); len(blobs) != 1 {
		t.Errorf("openai parts: %d blobs", len(blobs))
	}
	// Identical texts are one file.
	_, blobs, _ = persist(t, anthropicDoc(big("same", 800), big("same", 800), "last"), testOptions(30_000), m)
	if len(blobs) != 2 || blobs[0].Hash != blobs[1].Hash {
		t.Errorf("identical results: %d blobs", len(blobs))
	}
}

// TestExactness: texts the document spells with escapes a re-encoding would not give
// back keep their original literal, and come back byte for byte.
func TestExactness(t *testing.T) {
	text := strings.ReplaceAll(big("x", 800), "line 7:", "line 7: <a/b> é \x7f \x1f \b")
	canonical, _ := offload.Encode(text)
	for _, c := range []struct {
		name, from, to string
		raw            bool
	}{
		{"canonical", "", "", false},
		{"raw DEL", "\x7f", "\x7f", false},
		{"html escapes", "<", `\u003c`, true},
		{"escaped slash", "/", `\/`, true},
		{"escaped non-ASCII", "é", `\u00e9`, true},
		{"uppercase hex", `\u001f`, `\u001F`, true},
		{"long backspace", `\b`, `\u0008`, true},
		{"lone surrogate", "é", `\ud800`, true},
		{"raw U+2028", "é", "\u2028", true},
		{"invalid UTF-8", "é", "\xff", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			lit := canonical
			if c.from != "" {
				if !strings.Contains(lit, c.from) {
					t.Fatalf("%q not in the literal", c.from)
				}
				lit = strings.Replace(lit, c.from, c.to, 1)
			}
			doc := strings.Replace(anthropicDoc("@@BODY@@", "last"), `"@@BODY@@"`, lit, 1)
			m := memStore{}
			_, blobs, st := persist(t, doc, testOptions(1000), m)
			if len(blobs) != 1 {
				t.Fatalf("%d blobs", len(blobs))
			}
			if got := blobs[0].RawHash != ""; got != c.raw {
				t.Errorf("original literal kept: %v, want %v", got, c.raw)
			}
			if (st.Raw == 1) != c.raw {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestPreviewOf(t *testing.T) {
	for _, c := range []struct {
		text string
		size int
		want int
	}{
		{"abc\ndef\n", 100, 8},
		{"abc\ndef\nghi\n", 9, 8},
		{"abc\ndef\nghi\n", 0, 0},
		{strings.Repeat("x", 50) + "\n" + strings.Repeat("y", 100), 60, 51},
		{"ab\n" + strings.Repeat("y", 100), 60, 60}, // whole lines fill less than half: cut the line
		{"ab\n" + strings.Repeat("é", 100), 60, 59}, // never inside a UTF-8 sequence
		{"ab\n" + strings.Repeat("😀", 100), 60, 59}, // 3 + 14*4 = 59
	} {
		got := previewOf(c.text, c.size)
		if got != c.want {
			t.Errorf("previewOf(%q, %d) = %d, want %d", human.Clip(c.text, 20), c.size, got, c.want)
		}
		if !utf8.ValidString(c.text[:got]) {
			t.Errorf("previewOf(%q, %d) splits a UTF-8 sequence", human.Clip(c.text, 20), c.size)
		}
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	h := store.Hash([]byte("x"))
	raw := store.Hash([]byte(`"x"`))
	for _, r := range []Reference{
		{Bytes: 40000, Lines: 1, Tokens: 1, Shown: 2000, Path: "/abs/.ctx-store/" + h[:2] + "/" + h},
		{Bytes: 40000, Lines: 2, Tokens: 9000, Path: ".ctx-store/" + h[:2] + "/" + h, Raw: raw},
		{Bytes: 5, Lines: 0, Tokens: 0, Shown: 5, Path: "/My Documents/it's here/" + h[:2] + "/" + h},
		{Bytes: 5, Lines: 0, Tokens: 0, Shown: 5, Path: `C:\store\` + h[:2] + `\` + h},
	} {
		r.Hash = h
		line := r.Marker()
		if strings.ContainsAny(line, "\n\r") || !strings.HasPrefix(line, MarkerPrefix) {
			t.Errorf("marker %q", line)
		}
		got, err := ParseMarker(line)
		if err != nil || got != r {
			t.Errorf("ParseMarker(%q) = %+v, %v; want %+v", line, got, err, r)
		}
	}
}

func TestParseMarkerRefuses(t *testing.T) {
	h := store.Hash([]byte("x"))
	good := Reference{Bytes: 10, Lines: 1, Tokens: 3, Shown: 2, Hash: h, Path: "/s/" + h[:2] + "/" + h}.Marker()
	if _, err := ParseMarker(good); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"../../etc/passwd",
		"/etc/passwd",
		"/s/" + h[:2] + "/" + h[:63],                    // a hash too short
		"/s/" + h[:2] + "/" + h + "0",                   // too long
		"/s/" + h[:2] + "/" + strings.ToUpper(h),        // not lowercase
		"/s/zz/" + h,                                    // the folder is not the hash's
		"/s/" + h[:2] + h,                               // no folder
		"/s/" + h[:2] + "/../../../etc/passwd/" + h[:2], // traversal
	} {
		line := strings.Replace(good, "/s/"+h[:2]+"/"+h, path, 1)
		if r, err := ParseMarker(line); err == nil {
			t.Errorf("ParseMarker accepted path %q: %+v", path, r)
		}
	}
	for _, line := range []string{
		strings.Replace(good, "(10 bytes", "(ten bytes", 1),
		strings.Replace(good, "first 2 bytes", "first 20 bytes", 1), // preview longer than the text
		strings.TrimSuffix(good, "]"),
		good + " and more",
		strings.Replace(good, "]", "; original encoding: sha256:"+h[:60]+"]", 1),
		"[ctx-persist: something else]",
	} {
		if r, err := ParseMarker(line); err == nil {
			t.Errorf("ParseMarker accepted %q: %+v", line, r)
		}
	}
}

// TestRestoreRefuses: references that are crafted, point at missing or altered files, or
// do not match their file stop the restore; the store is asked for nothing but hashes.
func TestRestoreRefuses(t *testing.T) {
	text := big("x", 800)
	doc := anthropicDoc(text, "last")
	m := memStore{}
	out, blobs, _ := persist(t, doc, testOptions(1000), m)
	h := blobs[0].Hash
	var asked []string
	get := func(hh string) ([]byte, error) {
		asked = append(asked, hh)
		return m.get(hh)
	}
	try := func(name, doc string, want error) {
		t.Helper()
		asked = nil
		tr := parse(t, doc)
		edits, _, err := Restore(tr, get)
		if err == nil || !errors.Is(err, ErrReference) || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %d edits, error %v; want %v", name, len(edits), err, want)
		}
		for _, a := range asked {
			if !store.ValidHash(a) {
				t.Errorf("%s: the store was asked for %q", name, a)
			}
		}
	}
	path := filepath.Join("/st", h[:2], h)
	try("traversal", strings.Replace(out, path, "../../etc/passwd", 1), nil)
	try("absolute path", strings.Replace(out, path, "/etc/passwd", 1), nil)
	try("short hash", strings.Replace(out, path, path[:len(path)-1], 1), nil)
	// An absolute path elsewhere with a valid hash: only the hash is used, and the store
	// does not have it.
	other := store.Hash([]byte("other"))
	try("elsewhere", strings.Replace(out, path, "/etc/"+other[:2]+"/"+other, 1), store.ErrNotFound)

	missing := memStore{}
	get = missing.get
	try("missing", out, store.ErrNotFound)

	tampered := memStore{h: strings.Replace(text, "x line 5", "y line 5", 1)}
	get = tampered.get
	try("tampered", out, store.ErrCorrupt)

	// The file is intact but the document's preview was edited.
	get = m.get
	try("edited preview", strings.Replace(out, "x line 3:", "x line 3!", 1), nil)
	// What a reference says must be exactly what ctx-persist writes, so a text that only
	// resembles one is never taken for it.
	try("leading zero", strings.Replace(out, "stored in full (", "stored in full (0", 1), nil)
	try("blank line", strings.Replace(out, `\n[ctx-persist`, `\n\n[ctx-persist`, 1), nil)
}

func TestRestoreNothing(t *testing.T) {
	doc := anthropicDoc(big("x", 800), "last")
	tr := parse(t, doc)
	edits, st, err := Restore(tr, func(string) ([]byte, error) { t.Fatal("store read"); return nil, nil })
	if err != nil || len(edits) != 0 || st.Restored != 0 {
		t.Errorf("no references: %d edits %+v %v", len(edits), st, err)
	}
}

// TestRestoreAfterOtherTiers: a reference that a later tier moved (a document converted,
// messages dropped before it) still restores; only its own literal changes.
func TestRestoreKeepsTheRest(t *testing.T) {
	m := memStore{}
	doc := anthropicDoc(big("a", 800), big("b", 800), "last")
	out, _, _ := persist(t, doc, testOptions(30_000), m)
	// Drop the first call and result: the second reference is still restored.
	tr := parse(t, out)
	cut := tr.Messages[1].Span.Start
	end := tr.Messages[3].Span.Start
	shorter := out[:cut] + out[end:]
	back := restore(t, shorter, m)
	want := doc[:parse(t, doc).Messages[1].Span.Start] + doc[parse(t, doc).Messages[3].Span.Start:]
	if back != want {
		t.Errorf("restore after a cut differs at byte %d", firstDiff(back, want))
	}
}

// TestPlanRedacts: with Options.Redact, the stored file holds a marker where the result
// held a key (issue 40): in a canonical literal, and in one kept as written (an escaped
// slash); the reference describes the stored file, so Restore checks it and gives the
// result back with the marker, and nothing else changes.
func TestPlanRedacts(t *testing.T) {
	const key = "sk-ant-api03-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0AcQwErTyUiOp-AA"
	text := "ANTHROPIC_API_KEY=" + key + "\n" + big("x", 300)
	for _, c := range []struct {
		name, from, to string
	}{{"canonical", "", ""}, {"raw", "/", `\/`}} {
		t.Run(c.name, func(t *testing.T) {
			lit, _ := offload.Encode(text + "path /usr/lib\n")
			if c.from != "" {
				lit = strings.Replace(lit, c.from, c.to, 1)
			}
			doc := strings.Replace(anthropicDoc("@@BODY@@", "last"), `"@@BODY@@"`, lit, 1)
			o := testOptions(1000)
			o.Redact = redact.New()
			tr := parse(t, doc)
			edits, blobs, _ := Plan(tr, o)
			if len(blobs) != 1 {
				t.Fatalf("%d blobs", len(blobs))
			}
			for _, data := range []string{blobs[0].Data, blobs[0].RawData} {
				if strings.Contains(data, "Zx9Qm2") {
					t.Errorf("the store would keep the key: %.120q", data)
				}
			}
			if got := blobs[0].RawHash != ""; got != (c.from != "") {
				t.Errorf("original literal kept: %v, want %v", got, c.from != "")
			}
			if !strings.Contains(blobs[0].Data, "ANTHROPIC_API_KEY=[redacted: anthropic-api-key]\n") {
				t.Errorf("no marker in the stored text: %.120q", blobs[0].Data)
			}
			out, err := tr.Apply(edits)
			if err != nil {
				t.Fatal(err)
			}
			m := memStore{}
			m.put(blobs)
			back := restore(t, string(out), m)
			if want := strings.Replace(doc, key, "[redacted: anthropic-api-key]", 1); back != want {
				t.Errorf("restored differs from the input with the marker at byte %d", firstDiff(back, want))
			}
		})
	}
}
