package transcript

import "testing"

// TestEveryFormatDescribed walks Formats: each format has its row (a wire, and what the
// row says agrees with the format's own name and kind), and parses by its name.
func TestEveryFormatDescribed(t *testing.T) {
	wires := map[Wire]bool{}
	for _, f := range Formats {
		info, ok := formats[f]
		if !ok || info.wire == 0 {
			t.Errorf("%s has no row in formats.go", f)
			continue
		}
		wires[f.Wire()] = true
		if got, err := ParseFormat(string(f)); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
		if f.JSONL() && f.Agent() == "" {
			t.Errorf("%s is a session log with no agent", f)
		}
		if f.JSONL() && f.UsageSource() == "" {
			t.Errorf("%s is a session log that says nowhere where usage is", f)
		}
		if !f.JSONL() && f.Compacts() {
			t.Errorf("%s is a request body that compacts", f)
		}
	}
	if len(formats) != len(Formats) {
		t.Errorf("formats.go has %d rows, Formats %d formats", len(formats), len(Formats))
	}
	for _, w := range Wires {
		if !wires[w] {
			t.Errorf("wire %s has no format", w)
		}
		if w.Request().Wire() != w {
			t.Errorf("wire %s: its request format %q is of wire %s", w, w.Request(), w.Request().Wire())
		}
	}
}
