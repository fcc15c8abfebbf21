package transcript

import (
	"strings"
	"testing"
)

// FuzzParse checks that no input makes the reader panic, and that whatever it accepts has
// every span inside the document.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}]}`,
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]},{"role":"tool","tool_call_ids":["a"],"content":"r"}]`,
		`{"instructions":"i","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"e"},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`,
		"{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"assistant\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"y\"}]}}\n",
		"{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"x\"}}\n{\"timestamp\":\"t\",\"type\":\"compacted\",\"payload\":{\"message\":\"s\"}}\n",
		`{"messages": [}`, "", "\x00", "[1,2,3]", `{"history":[{"role":"user"}]}`,
	}
	for _, s := range seeds {
		f.Add(s, "")
	}
	f.Add(seeds[0], "messages")
	f.Fuzz(func(t *testing.T, doc, path string) {
		tr, err := Parse([]byte(doc), Options{Path: path})
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error message")
			}
			return
		}
		in := func(s Span) bool { return s.IsZero() || (0 <= s.Start && s.Start <= s.End && s.End <= len(doc)) }
		var check func(b *Block)
		check = func(b *Block) {
			if !in(b.Span) || !in(b.Body) {
				t.Fatalf("block span out of range: %+v", b)
			}
			if b.Image != nil && !in(b.Image.Data) {
				t.Fatalf("image span out of range")
			}
			_ = tr.BodyText(b)
			for i := range b.Parts {
				check(&b.Parts[i])
			}
		}
		for _, m := range tr.Messages {
			if !in(m.Span) {
				t.Fatalf("message span out of range: %+v", m.Span)
			}
			for i := range m.Blocks {
				check(&m.Blocks[i])
			}
		}
		for _, p := range tr.Pairs() {
			if p.Call != None {
				_ = tr.Block(p.Call)
			}
			if p.Result != None {
				_ = tr.Block(p.Result)
			}
		}
	})
}
