package transcript

import (
	"strings"
	"testing"
)

// ccRecord is a Claude Code message record.
func ccRecord(typ, uuid, parent string, sidechain bool, content string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	side := "false"
	if sidechain {
		side = "true"
	}
	msg := `{"role":"` + typ + `","content":"` + content + `"}`
	if typ == "assistant" {
		msg = `{"id":"m-` + uuid + `","role":"assistant","content":[{"type":"text","text":"` + content + `"}]}`
	}
	return `{"parentUuid":` + p + `,"isSidechain":` + side + `,"type":"` + typ + `","message":` + msg + `,"uuid":"` + uuid + `"}`
}

func TestDropMessagesJSON(t *testing.T) {
	doc := `{"messages":[ {"role":"user","content":"a"}, {"role":"assistant","content":"b"}, {"role":"user","content":"c"}, {"role":"assistant","content":"d"} ]}`
	tr, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		drop []bool
		want string
	}{
		{[]bool{true, false, false, false}, `{"messages":[ {"role":"assistant","content":"b"}, {"role":"user","content":"c"}, {"role":"assistant","content":"d"} ]}`},
		{[]bool{false, true, true, false}, `{"messages":[ {"role":"user","content":"a"}, {"role":"assistant","content":"d"} ]}`},
		{[]bool{false, false, true, true}, `{"messages":[ {"role":"user","content":"a"}, {"role":"assistant","content":"b"} ]}`},
		{[]bool{true, false, true, false}, `{"messages":[ {"role":"assistant","content":"b"}, {"role":"assistant","content":"d"} ]}`},
	} {
		out, err := tr.Apply(tr.DropMessages(c.drop))
		if err != nil || string(out) != c.want {
			t.Errorf("drop %v: %v\n got %s\nwant %s", c.drop, err, out, c.want)
		}
	}
}

// TestRechain: a kept message whose parent was dropped hangs off its nearest kept ancestor
// (through records that are not messages), or off root when none is left. In a session read
// with every subagent line (AllThreads), that ancestor is on the message's own chain, not whatever kept
// line comes before it in the file.
func TestRechain(t *testing.T) {
	lines := []string{
		ccRecord("user", "u1", "", false, "task"),                 // message 0
		ccRecord("assistant", "a1", "u1", false, "delegating"),    // message 1
		ccRecord("user", "s1", "", true, "subagent task"),         // message 2 (sidechain)
		ccRecord("assistant", "s2", "s1", true, "subagent reply"), // message 3 (sidechain)
		`{"parentUuid":"a1","isSidechain":false,"type":"system","content":"hook ran","uuid":"x1"}`,
		ccRecord("user", "u2", "x1", false, "next"),         // message 4
		ccRecord("assistant", "a2", "u2", false, "working"), // message 5
		ccRecord("user", "u3", "a2", false, "last"),         // message 6
		ccRecord("assistant", "a3", "u3", false, "done"),    // message 7
	}
	doc := strings.Join(lines, "\n") + "\n"
	tr, err := Parse([]byte(doc), Options{AllThreads: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 8 {
		t.Fatalf("%d messages, want 8", len(tr.Messages))
	}
	parentOf := func(out, uuid string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, `"uuid":"`+uuid+`"`) {
				return l[len(`{"parentUuid":`):strings.Index(l, `,"isSidechain"`)]
			}
		}
		return "gone"
	}
	for _, c := range []struct {
		name string
		drop []int
		root string
		want map[string]string // uuid -> parentUuid in the output
	}{
		// The main chain's first message goes: the next main message becomes a root; the
		// subagent's lines are a chain of their own and stay as they were.
		{"first", []int{0}, "", map[string]string{"a1": "null", "s1": "null", "s2": `"s1"`, "u2": `"x1"`}},
		// The delegating turn goes: u2 hangs off u1 (its nearest kept ancestor), not off the
		// subagent's s2, the kept line just before it in the file.
		{"middle", []int{1}, "", map[string]string{"u2": `"u1"`, "s2": `"s1"`}},
		// A dropped run reaching back to the root hangs off root.
		{"root", []int{0, 1, 4, 5}, "sum", map[string]string{"u3": `"sum"`, "s1": "null"}},
		// Dropping inside the subagent chain re-chains the subagent's rest to a root.
		{"sidechain", []int{2}, "", map[string]string{"s2": "null", "u2": `"x1"`}},
	} {
		drop := make([]bool, len(tr.Messages))
		for _, i := range c.drop {
			drop[i] = true
		}
		out, err := tr.Apply(tr.DropMessages(drop))
		if c.root != "" {
			// DropMessages makes roots; Rechain with a root hangs the first kept off it.
			var edits []Edit
			for _, e := range tr.DropMessages(drop) {
				if e.With == "" {
					edits = append(edits, e)
				}
			}
			out, err = tr.Apply(append(edits, tr.Rechain(drop, c.root)...))
		}
		if err != nil {
			t.Fatal(err)
		}
		for uuid, want := range c.want {
			if got := parentOf(string(out), uuid); got != want {
				t.Errorf("%s: %s's parent is %s, want %s\n%s", c.name, uuid, got, want, out)
			}
		}
		// Read again without the subagent lines, the main conversation is what was kept.
		after, err := Parse(out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		main := 0
		for i := range tr.Messages {
			if !drop[i] && i != 2 && i != 3 {
				main++
			}
		}
		if len(after.Messages) != main {
			t.Errorf("%s: the main conversation reads as %d messages, want %d", c.name, len(after.Messages), main)
		}
	}
}
