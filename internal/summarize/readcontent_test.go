package summarize

import (
	"regexp"
	"testing"

	"github.com/ctxkit/ctxkit/internal/toolvocab"
)

// TestNumberedEnd holds numberedEnd to the regular expression it stands for.
func TestNumberedEnd(t *testing.T) {
	for _, l := range []string{"", "1", "1→", "     1→text", "  12\tx", "\t3\t", "\n\f\r 4→a", "\v5→",
		"x1→", " →", "12 →", "1\t\t", "0→→", "123", " \t ", "٣→", "1\u2192", "1\u2193"} {
		want := -1
		if loc := numbered.FindStringIndex(l); loc != nil {
			want = loc[1]
		}
		if got := numberedEnd(l); got != want {
			t.Errorf("numberedEnd(%q) = %d, the expression ends at %d", l, got, want)
		}
	}
}

// FuzzNumberedEnd: numberedEnd agrees with numbered on any line.
func FuzzNumberedEnd(f *testing.F) {
	f.Add("     1→text")
	f.Add("\t3\tx")
	f.Fuzz(func(t *testing.T, l string) {
		want := -1
		if loc := numbered.FindStringIndex(l); loc != nil {
			want = loc[1]
		}
		if got := numberedEnd(l); got != want {
			t.Errorf("numberedEnd(%q) = %d, the expression ends at %d", l, got, want)
		}
	})
}

// reminder is what stripReminder is held to.
var reminder = regexp.MustCompile(`(?s)\n*<system-reminder>.*?</system-reminder>\s*$`)

var reminderSeeds = []string{"", "text", "<system-reminder>x</system-reminder>", "a\n\n<system-reminder>x</system-reminder>\n \t",
	"a<system-reminder>x</system-reminder>b", "a</system-reminder>", "<system-reminder></system-reminder>",
	"<system-reminder>", "</system-reminder><system-reminder>", "x</system-reminder><system-reminder>y</system-reminder>",
	"a<system-reminder>1</system-reminder>b<system-reminder>2</system-reminder>\n", "\n<system-reminder>x</system-reminder>\v",
	"<system-reminder></system-reminder\xff>", "\xff\n<system-reminder>\xfe</system-reminder>\r\n"}

func TestStripReminder(t *testing.T) {
	for _, s := range reminderSeeds {
		if got, want := stripReminder(s), reminder.ReplaceAllString(s, ""); got != want {
			t.Errorf("stripReminder(%q) = %q, the expression leaves %q", s, got, want)
		}
	}
}

// FuzzStripReminder: stripReminder agrees with reminder on any text.
func FuzzStripReminder(f *testing.F) {
	for _, s := range reminderSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := stripReminder(s), reminder.ReplaceAllString(s, ""); got != want {
			t.Errorf("stripReminder(%q) = %q, the expression leaves %q", s, got, want)
		}
	})
}

var decisionSeeds = []string{"I'll fix it now.", "We will see.", "Let's go with the map because it is faster.",
	"The root cause was a race.", "I decided to switch to a slice instead of a map.", "THE FIX IS simple",
	"Going to try this", "It should be fine.", "I chose the second one.", "Switched to bufio.",
	"Let\u017fs go.", "the problem was here", "nothing to see", "installed", "willow", "I'LL DO IT"}

// TestSaysDecision holds saysDecision to decisionWords.
func TestSaysDecision(t *testing.T) {
	for _, s := range decisionSeeds {
		if got, want := saysDecision(s), decisionWords.MatchString(s); got != want {
			t.Errorf("saysDecision(%q) = %v, the expression says %v", s, got, want)
		}
	}
}

// FuzzSaysDecision: saysDecision agrees with decisionWords on any sentence.
func FuzzSaysDecision(f *testing.F) {
	for _, s := range decisionSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := saysDecision(s), decisionWords.MatchString(s); got != want {
			t.Errorf("saysDecision(%q) = %v, the expression says %v", s, got, want)
		}
	})
}

// TestEditOfEveryPathKey: an edit is read whichever of the vocabulary's path keys names
// its file, the keys the extractor took it for an edit by (issue 39: editOf knew five of
// them, so a write naming its file by "file" or "absolute_path" was an edit whose content
// was lost).
func TestEditOfEveryPathKey(t *testing.T) {
	for _, key := range toolvocab.PathKeys {
		e, ok := editOf("write_file", `{"`+key+`":"/w/a.txt","content":"new text"}`)
		if !ok || e.path != "/w/a.txt" || e.write == nil || *e.write != "new text" {
			t.Errorf("%s: editOf = %+v, %v; want a write of /w/a.txt", key, e, ok)
		}
	}
}
