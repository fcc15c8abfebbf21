package testgen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestPinned holds Options.Pinned to what the clients send: read back, each document has
// the instructions the format's rules pin, where the client puts them. (Without Pinned
// the generator writes what it wrote before: it draws nothing more from its source.)
func TestPinned(t *testing.T) {
	for _, tc := range []struct {
		format string
		// the pinned shape of the opening messages: per message "W" pinned whole, "dev"
		// a developer message, else a letter per block (p pinned, . not)
		want string
	}{
		{"codex", "header|dev|W|."},
		{"responses", "header|dev|W|."},
		{"openai", "system|dev|W|."},
		{"anthropic", "header|pp."},
		{"claude-code", "pp."},
	} {
		doc := generate(t, Options{Format: tc.format, Size: 200 << 10, Seed: 7, Pinned: true})
		tr, err := transcript.Parse(doc, transcript.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		n := strings.Count(tc.want, "|") + 1
		var got []string
		pinnedBytes := 0
		for _, m := range tr.Messages[:n] {
			switch {
			case m.Header:
				got = append(got, "header")
			case m.Role == "system" || m.Role == "developer":
				got = append(got, m.Role[:3])
				if m.Role == "system" {
					got[len(got)-1] = "system"
				}
			case m.Pinned:
				got = append(got, "W")
			default:
				s := ""
				for _, b := range m.Blocks {
					if b.Pinned {
						s += "p"
					} else {
						s += "."
					}
				}
				got = append(got, s)
			}
			for bi := range m.Blocks {
				if b := &m.Blocks[bi]; b.Pinned {
					pinnedBytes += b.Body.Len()
				}
			}
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("%s: opening messages %q, want %q", tc.format, g, tc.want)
		}
		if pinnedBytes < 2000 {
			t.Errorf("%s: %d bytes of pinned text, want the several KB a real AGENTS.md or CLAUDE.md has", tc.format, pinnedBytes)
		}
	}
	// A long Codex session compacts; the compacted history opens with the initial context.
	doc := generate(t, Options{Format: "codex", Size: 6 << 20, Seed: 3, Pinned: true})
	tr, err := transcript.Parse(doc, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(`"type":"compacted"`)) || tr.Messages[1].Role != "developer" || !tr.Messages[2].Pinned || tr.Messages[2].Summary {
		t.Errorf("compacted codex session: the initial context does not open the replacement history")
	}
}
