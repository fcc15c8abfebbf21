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
	got, gm := Fit(s, m, 1200, count, false)
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
	if again, _ := Fit(got, gm, 1200, count, false); Render(again, gm) != text {
		t.Error("Fit changed sections that fit")
	}
	// --keep-first: the goal stays whole.
	kept, _ := Fit(s, m, 1200, count, true)
	if kept["Goal and user requests"][0] != s["Goal and user requests"][0] {
		t.Errorf("--keep-first: goal %q, want it whole", kept["Goal and user requests"][0])
	}
}
