package summarize

import (
	"fmt"
	"strings"
	"testing"
)

// A summary and what it restores take at most 15% of what they replace (issue 38): Fit
// gives up the fixed errors, the commands that only ran and the older detail first, and
// never a request's first words, a file changed or an open error.
func TestFitKeepsWhatMatters(t *testing.T) {
	s := Sections{"Goal and user requests": {"Goal: “" + strings.Repeat("port the config parser to Go and keep every test green ", 10) + "”"}}
	for i := range 12 {
		s["Goal and user requests"] = append(s["Goal and user requests"], fmt.Sprintf("“request %d: %s”", i, strings.Repeat("please also look at the reader's handling of CRLF ", 8)))
		s["Commands and tests"] = append(s["Commands and tests"], fmt.Sprintf("`go test ./pkg%d/...` → ran: ok %s", i, strings.Repeat("x", 150)))
		s["Files read"] = append(s["Files read"], fmt.Sprintf("/r/pkg%d/reader.go", i))
		s["Decisions"] = append(s["Decisions"], fmt.Sprintf("Decision %d: use bufio.Reader instead of a regexp because %s", i, strings.Repeat("it is faster ", 15)))
	}
	s["Files changed"] = []string{"/r/pkg1/reader.go", "/r/pkg2/reader.go", "/r/cmd/main.go"}
	s["Errors"] = []string{"`go vet ./...`: " + strings.Repeat("vet: x.go:1: unreachable code ", 10) + "[fixed]",
		"`make lint`: " + strings.Repeat("lint: long line ", 20) + "[unresolved]"}
	s["At the cut"] = []string{"The user's latest request (the last under Goal and user requests): not answered yet",
		"The assistant had just said: “" + strings.Repeat("I am reading the reader now. ", 10) + "”"}
	s["Next step"] = []string{"Answer the user's latest request, the last under Goal and user requests."}
	m := Meta{Messages: 60, Tokens: 8000, Backend: "local"}
	count := func(s string) int { return len(s) / 4 }
	if count(Render(s, m)) <= 1200 {
		t.Fatalf("the sections fit already (%d tokens): the test tries nothing", count(Render(s, m)))
	}
	got, gm, _, _ := Fit(s, m, nil, 1200, count, false)
	text := Render(got, gm)
	if n := count(text); n > 1200 {
		t.Errorf("%d tokens, want at most 1200:\n%s", n, text)
	}
	words := strings.Join(strings.Fields(text), " ")
	for _, it := range s["Goal and user requests"] {
		body := strings.Join(strings.Fields(strings.TrimPrefix(it, "Goal: ")), " ")
		if first := strings.TrimPrefix(body, "“")[:60]; !strings.Contains(words, first) {
			t.Errorf("request %q left out", first)
		}
	}
	for _, want := range []string{"/r/pkg1/reader.go", "/r/pkg2/reader.go", "/r/cmd/main.go", "`make lint`: ", "[unresolved]",
		"not answered yet", "Answer the user's latest request"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q left out:\n%s", want, text)
		}
	}
	if strings.Contains(text, "go vet") {
		t.Errorf("the fixed error kept while over the budget:\n%s", text)
	}
	// Sections that fit are left as they are.
	if again, _, _, _ := Fit(got, gm, nil, 1200, count, false); Render(again, gm) != text {
		t.Error("Fit changed sections that fit")
	}
	// --keep-first: the goal stays whole.
	kept, _, _, _ := Fit(s, m, nil, 1200, count, true)
	if kept["Goal and user requests"][0] != s["Goal and user requests"][0] {
		t.Errorf("--keep-first: goal %q, want it whole", kept["Goal and user requests"][0])
	}
}

// The restored files give way before the user's requests, the goal and the open errors
// (issue 38: summary and restored files at most 15% at every point): the least recently
// touched file goes first, and the last one kept is cut to the room left.
func TestFitRestoredFilesGiveWayFirst(t *testing.T) {
	s := Sections{"Goal and user requests": {"Goal: “" + strings.Repeat("port the config parser to Go ", 12) + "”"}}
	for i := range 4 {
		s["Goal and user requests"] = append(s["Goal and user requests"], fmt.Sprintf("“request %d: %s”", i, strings.Repeat("also handle CRLF in the reader ", 8)))
	}
	s["Errors"] = []string{"`make lint`: " + strings.Repeat("lint: long line ", 20) + "[unresolved]"}
	s["Files changed"] = []string{"/r/reader.go"}
	s["At the cut"] = []string{"The user's latest request (the last under Goal and user requests): not answered yet"}
	s["Next step"] = []string{"Answer the user's latest request, the last under Goal and user requests."}
	var lines []string
	for i := range 120 {
		lines = append(lines, fmt.Sprintf("func f%d() int { return %d } // line %d of the reader", i, i, i+1))
	}
	file := strings.Join(lines, "\n")
	rs := []Restored{{Path: "/r/reader.go", Content: file, focus: len(file) / 2, changed: true},
		{Path: "/r/old.go", Content: file}}
	m := Meta{Messages: 40, Tokens: 20000, Backend: "local"}
	count := func(s string) int { return len(s) / 4 }
	// Room for the summary as it is and half the first file.
	budget := count(Render(s, m)) + count(RenderRestored(rs[:1]))/2
	got, gm, kept, ok := Fit(s, m, rs, budget, count, false)
	if !ok {
		t.Fatal("nothing fits")
	}
	if n := count(Render(got, gm) + RenderRestored(kept)); n > budget {
		t.Errorf("%d tokens, want at most %d", n, budget)
	}
	if fmt.Sprint(got["Goal and user requests"]) != fmt.Sprint(s["Goal and user requests"]) || fmt.Sprint(got["Errors"]) != fmt.Sprint(s["Errors"]) {
		t.Errorf("the requests or the open error shortened while a restored file could give way:\n%s", Render(got, gm))
	}
	if len(kept) != 1 || kept[0].Path != "/r/reader.go" || !kept[0].Partial || kept[0].Lines == "" || len(kept[0].Content) >= len(file) {
		t.Fatalf("restored %d files, want the first one cut: %+v", len(kept), kept)
	}
	// The lines it names are the file's.
	var from, to int
	fmt.Sscanf(kept[0].Lines, "%d-%d", &from, &to)
	if first, _, _ := strings.Cut(kept[0].Content, "\n"); first != lines[from-1] {
		t.Errorf("lines %s start with %q, want %q", kept[0].Lines, first, lines[from-1])
	}
	// Cut again (Fit cuts what ChooseRestored cut), it still names the file's lines.
	again := cutAround(kept[0], len(kept[0].Content)/2)
	fmt.Sscanf(again.Lines, "%d-%d", &from, &to)
	if first, _, _ := strings.Cut(again.Content, "\n"); first != lines[from-1] {
		t.Errorf("cut again: lines %s start with %q, want %q", again.Lines, first, lines[from-1])
	}
}

// Where even the smallest summary (the frame, each request's first words) is over the
// budget, Fit says so rather than return a summary over it: ctx-summarize then holds back.
func TestFitSaysWhenNothingFits(t *testing.T) {
	s := Sections{"Goal and user requests": {"Goal: “fix the parser”", "“and the reader”", "“and the writer”"},
		"At the cut": {"The user's latest request (the last under Goal and user requests): not answered yet"},
		"Next step":  {"Answer the user's latest request, the last under Goal and user requests."}}
	m := Meta{Messages: 6, Tokens: 300, Backend: "local"}
	count := func(s string) int { return len(s) / 4 }
	if _, _, _, ok := Fit(s, m, nil, 45, count, false); ok {
		t.Error("a summary fits in 45 tokens")
	}
	if _, _, _, ok := Fit(s, m, nil, count(Render(s, m)), count, false); !ok {
		t.Error("sections that fit as they are do not fit")
	}
}
