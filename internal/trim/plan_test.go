package trim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// planApply runs Plan with every message priced at 100 tokens and splices its edits: the
// messages dropped, the output and the stats.
func planApply(t *testing.T, doc string, maxTokens int, strategy string) ([]int, string, Stats) {
	t.Helper()
	tr := parse(t, doc)
	o := Defaults()
	o.MaxTokens, o.Strategy, o.Counter = maxTokens, strategy, estimate()
	o.PerMessage = make([]int, len(tr.Messages))
	for i := range o.PerMessage {
		o.PerMessage[i] = 100
		o.Tokens += 100
	}
	edits, st := Plan(tr, o)
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []int
	for _, d := range st.Dropped {
		dropped = append(dropped, d.Message)
	}
	return dropped, string(out), st
}

// unpaired counts the calls without a result and the results without a call.
func unpaired(t *testing.T, doc string) int {
	t.Helper()
	n := 0
	for _, p := range parse(t, doc).Pairs() {
		if p.Call == transcript.None || p.Result == transcript.None {
			n++
		}
	}
	return n
}

// TestPlanOpener: an Anthropic conversation that loses its opening user message gets the
// opening user message ctx-repair writes, and the tier counts it against the goal.
func TestPlanOpener(t *testing.T) {
	// 0 system prompt, 1 user, 2 assistant, 3 user, 4 assistant, 5 user, 6 assistant.
	turns := `{"role":"user","content":"task"},{"role":"assistant","content":"one"},{"role":"user","content":"more"},` +
		`{"role":"assistant","content":"two"},{"role":"user","content":"last"},{"role":"assistant","content":"done"}]}`
	doc := `{"system":"s","messages":[` + turns
	op := tokens.MessageOverhead("anthropic") + estimate().Count(repair.FirstUserText)

	// Room for the kept messages and the opener: the assistant message may open the rest.
	dropped, out, st := planApply(t, doc, 600+op, KeepLast)
	if fmt.Sprint(dropped) != "[1]" || !st.Opened || st.OpenerTokens != op || !st.Fits {
		t.Errorf("max %d: dropped %v, opened %v (%d tokens), fits %v", 600+op, dropped, st.Opened, st.OpenerTokens, st.Fits)
	}
	want := `{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"(The beginning of this conversation is not included.)"}]},{"role":"assistant","content":"one"},`
	if !strings.HasPrefix(out, want) {
		t.Errorf("output does not open with the opener:\n%s", out)
	}
	// One token less: the opener would not fit, so the assistant message goes too and a
	// user message opens the rest without help.
	dropped, out, st = planApply(t, doc, 600+op-1, KeepLast)
	if fmt.Sprint(dropped) != "[1 2]" || st.Opened || !st.Fits {
		t.Errorf("max %d: dropped %v, opened %v, fits %v", 600+op-1, dropped, st.Opened, st.Fits)
	}
	if !strings.HasPrefix(out, `{"system":"s","messages":[{"role":"user","content":"more"},`) {
		t.Errorf("output:\n%s", out)
	}
	// --strategy first keeps the opening user message: no opener.
	if _, _, st = planApply(t, doc, 300, KeepFirst); st.Opened {
		t.Error("an opener was added although the first user message stayed")
	}
	// Chat Completions has no such rule.
	oai := `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},` + turns
	if _, out, st = planApply(t, oai, 300, KeepLast); st.Opened || strings.Contains(out, repair.FirstUserText) {
		t.Errorf("an opener in an OpenAI document:\n%s", out)
	}
}

// TestApplyOpensBrokenInput: the opening rule holds even when the input breaks other
// rules of the API (which the tier leaves to ctx-repair).
func TestApplyOpensBrokenInput(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"` + strings.Repeat("task ", 200) + `"},{"role":"assistant","content":"one"},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"nowhere","content":"an orphan result"}]},{"role":"assistant","content":"ok"}]}`
	if len(repair.Check(parse(t, doc))) == 0 {
		t.Fatal("the input should break a rule")
	}
	out, st, err := trimDoc("doc.json", []byte(doc), capped(100), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Dropped) != 1 || st.Dropped[0].Message != 0 || !st.Opened {
		t.Errorf("dropped %v, opened %v", st.Dropped, st.Opened)
	}
	want := `{"messages":[{"role":"user","content":[{"type":"text","text":"(The beginning of this conversation is not included.)"}]},{"role":"assistant","content":"one"},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"nowhere","content":"an orphan result"}]},{"role":"assistant","content":"ok"}]}`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// lines splits a JSONL document into its lines, without the final newline's empty one.
func lines(doc string) []string { return strings.Split(strings.TrimSuffix(doc, "\n"), "\n") }

// TestPlanLimits: the window's trigger and --max-tokens are two limits; the tier acts over
// either and trims to the lower goal of those it is over.
func TestPlanLimits(t *testing.T) {
	// Ten messages of 100 tokens: 1,000 tokens. The newest exchange (200) always stays.
	doc := `{"messages":[{"role":"system","content":"s"}`
	for i := 0; i < 4; i++ {
		doc += `,{"role":"user","content":"u"},{"role":"assistant","content":"a"}`
	}
	doc += `,{"role":"user","content":"last"}]}`
	tr := parse(t, doc)
	if len(tr.Messages) != 10 {
		t.Fatalf("%d messages", len(tr.Messages))
	}
	for _, c := range []struct {
		effective, max int
		trigger        string
		goal, dropped  int
	}{
		{1000, 0, "utilization 100% (trigger 95%)", 850, 2},
		{2000, 800, "above --max-tokens 800", 800, 2},
		// A --max-tokens above the window does not stop the window's trigger.
		{1000, 2000, "utilization 100% (trigger 95%)", 850, 2},
		{1000, 700, "utilization 100% (trigger 95%) and above --max-tokens 700", 700, 3},
		{2000, 2000, "below 95% of window, within --max-tokens 2000", 1700, 0},
		{2000, 0, "below 95% of window", 1700, 0},
		{0, 0, "no window to measure against", 0, 0},
	} {
		o := Defaults()
		o.Effective, o.MaxTokens, o.Counter = c.effective, c.max, estimate()
		o.PerMessage = make([]int, len(tr.Messages))
		for i := range o.PerMessage {
			o.PerMessage[i] = 100
			o.Tokens += 100
		}
		_, st := Plan(tr, o)
		if st.Trigger != c.trigger || st.Goal != c.goal || len(st.Dropped) != c.dropped || st.Acts != (c.dropped > 0) {
			t.Errorf("window %d, max %d: trigger %q, goal %d, %d dropped, acts %v; want %q, %d, %d",
				c.effective, c.max, st.Trigger, st.Goal, len(st.Dropped), st.Acts, c.trigger, c.goal, c.dropped)
		}
	}
}

// TestPlanNeverGrows: when dropping the opening user message would need an opener that
// costs more than the message, and nothing else may go, the tier drops nothing: a lossy
// tier never returns more tokens than it was given.
func TestPlanNeverGrows(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a long answer"},{"role":"user","content":"a long question"}]}`
	tr := parse(t, doc)
	o := capped(150)
	o.Counter = estimate()
	o.PerMessage = []int{10, 5, 100, 100} // the system prompt, then a 5-token opening message
	o.Tokens = 215
	edits, st := Plan(tr, o)
	if len(edits) != 0 || len(st.Dropped) != 0 || st.Fits || !st.Acts || st.Opened {
		t.Errorf("edits %v, dropped %v, fits %v, opened %v: dropping the 5-token message for a 17-token opener", edits, st.Dropped, st.Fits, st.Opened)
	}
	// With a costlier opening message, dropping it is worth the opener.
	o.PerMessage[1], o.Tokens = 50, 260
	if _, st = Plan(tr, o); len(st.Dropped) != 1 || !st.Opened || st.Fits {
		t.Errorf("dropped %v, opened %v, fits %v", st.Dropped, st.Opened, st.Fits)
	}
}

// TestPlanHoldsBack: when dropping all the tier may cannot reach its goal, a document that
// fits the window is left whole (a partial drop would lose messages and break the prompt
// cache for a few tokens); one over the window still loses what may go.
func TestPlanHoldsBack(t *testing.T) {
	doc := `{"messages":[{"role":"system","content":"s"}`
	for i := 0; i < 4; i++ {
		doc += `,{"role":"user","content":"u"},{"role":"assistant","content":"a"}`
	}
	doc += `,{"role":"user","content":"last"}]}`
	tr := parse(t, doc)
	// A large system prompt and newest message; the eight between hold 10 tokens each.
	perMessage := []int{300, 10, 10, 10, 10, 10, 10, 10, 10, 620}
	for _, c := range []struct {
		effective int
		heldBack  bool
		dropped   int
	}{
		{1040, true, 0},  // 96%: over the trigger, within the window
		{1000, true, 0},  // exactly full still fits
		{990, false, 7},  // over the window: everything but the newest exchange goes
		{2000, false, 0}, // below the trigger
	} {
		o := Defaults()
		o.Effective, o.Counter, o.PerMessage, o.Tokens = c.effective, estimate(), perMessage, 1000
		edits, st := Plan(tr, o)
		if st.HeldBack != c.heldBack || len(st.Dropped) != c.dropped || (len(edits) > 0) != (c.dropped > 0) {
			t.Errorf("window %d: held back %v, dropped %d, %d edits (%s); want held back %v, %d dropped",
				c.effective, st.HeldBack, len(st.Dropped), len(edits), st.Trigger, c.heldBack, c.dropped)
		}
		if c.heldBack && (st.Fits || !st.Acts || st.Least != 930) {
			t.Errorf("window %d: fits %v, acts %v, least %d (want 930: the system prompt, the newest exchange)", c.effective, st.Fits, st.Acts, st.Least)
		}
	}
}
