package summarize

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// An error is open only if nothing later did the job (issue 38): a program not found and
// then run by another path, a lookup of a program followed by a run of it; a pipeline
// whose output says it failed is an error even though its status is tail's.
func TestErrorsFixedByAnotherCommand(t *testing.T) {
	var s cc
	s.user("make the tests pass and build the image")
	s.call("1", "Bash", `{"command":"pytest tests/test_api.py"}`)
	s.result("1", "Exit code 127\n/bin/bash: line 1: pytest: command not found", true)
	s.call("2", "Bash", `{"command":"cd /r && .venv/bin/pytest tests/test_api.py -q"}`)
	s.result("2", "4 passed in 0.21s", false)
	s.call("3", "Bash", `{"command":"which gradle"}`)
	s.result("3", "Exit code 1", true)
	s.call("4", "Bash", `{"command":"./gradlew build"}`)
	s.result("4", "BUILD SUCCESSFUL in 12s", false)
	s.call("5", "Bash", `{"command":"python -m mypy src"}`)
	s.result("5", "Exit code 1\n/usr/bin/python: No module named mypy", true)
	s.call("6", "Bash", `{"command":"docker build -t app . 2>&1 | tail -100"}`)
	s.result("6", "#7 [3/5] RUN pip install -r requirements.txt\n#7 ERROR: process \"/bin/sh -c pip install -r requirements.txt\" did not complete successfully: exit code: 1\nERROR: failed to solve: process did not complete successfully", false)
	s.call("7", "Bash", `{"command":"go test ./... 2>&1 | tail -20"}`)
	s.result("7", "ok  \texample.com/a\t0.01s\nok  \texample.com/b\t0.02s", false)
	s.assistant("The image does not build yet.")
	sections := localAll(t, s.doc())
	errs := sections["Errors"]
	want := []string{
		"`pytest tests/test_api.py`: /bin/bash: line 1: pytest: command not found [fixed]",
		"`which gradle`: Exit code 1 [fixed]",
		"`python -m mypy src`: /usr/bin/python: No module named mypy [unresolved]",
		"`docker build -t app . 2>&1 | tail -100`: #7 ERROR: process \"/bin/sh -c pip install -r requirements.txt\" did not complete successfully: exit code: 1 [unresolved]",
	}
	if fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	if cmds := strings.Join(sections["Commands and tests"], "\n"); strings.Contains(cmds, "docker build -t app . 2>&1 | tail -100` → ran") {
		t.Errorf("commands:\n%s\nthe failed docker build is listed as ran", cmds)
	}
}

// A tool that says its failure in its text, with no error flag (tau-bench's "Error: ..."),
// failed; a later success of the same lookup tool did the job, a file tool's only on the
// same file.
func TestErrorsInToolText(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"book the flight"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"book_reservation","arguments":"{\"flight\":\"HAT030\"}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":"Error: flight HAT030 not available on date 2024-05-13"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"b","type":"function","function":{"name":"get_user_details","arguments":"{\"user_id\":\"x\"}"}}]},` +
		`{"role":"tool","tool_call_id":"b","content":"Error: user not found"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_user_details","arguments":"{\"user_id\":\"mia_li_3668\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c","content":"{\"name\":\"Mia\"}"},` +
		`{"role":"assistant","content":"Which date instead?"}]}`
	got := localAll(t, []byte(doc))["Errors"]
	want := []string{"book_reservation(HAT030): Error: flight HAT030 not available on date 2024-05-13 [unresolved]", "get_user_details(x): Error: user not found [fixed]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errors:\n%q\nwant\n%q", got, want)
	}
}

// Summarized again, an error an earlier summary left unresolved is marked fixed when the
// messages since fixed it (issue 38: open only if nothing later fixed it).
func TestCarriedErrorFixedSince(t *testing.T) {
	earlier := Render(Sections{"Goal and user requests": {"Goal: “make the tests pass”"},
		"Errors": {"`pytest tests/test_api.py`: /bin/bash: line 1: pytest: command not found [unresolved]",
			"`make lint`: lint: long line [unresolved]"}}, Meta{Messages: 30, Tokens: 20000, Backend: "local"})
	var s cc
	s.compactSummary(earlier)
	s.user("try again through the venv")
	s.call("1", "Bash", `{"command":".venv/bin/pytest tests/test_api.py"}`)
	s.result("1", strings.Repeat("tests/test_api.py ....\n", 200)+"4 passed in 0.21s", false)
	s.assistant("The tests pass.")
	s.user("thanks")
	s.assistant("You're welcome.")
	out := runOn(t, "again.jsonl", s.doc(), "--force", "--keep", "1 turns")
	tr, err := transcript.Parse(out, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for mi := range tr.Messages {
		if tr.Messages[mi].Summary {
			text = tr.BodyText(&tr.Messages[mi].Blocks[0]) // the newest summary
		}
	}
	for _, want := range []string{"pytest: command not found [fixed]", "`make lint`: lint: long line [unresolved]"} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "command not found [unresolved]") {
		t.Errorf("the error fixed since is still unresolved:\n%s", text)
	}
}

// A status recorded as 0 is the last command's: after ; or in a pipeline the output says
// whether the run failed.
func TestErrorsHiddenStatus(t *testing.T) {
	doc := codexDoc(codexUser("run the tests"),
		codexShell("c1", "go test ./... ; echo done"), codexOutput("c1", "--- FAIL: TestParse (0.00s)\nFAIL\texample.com/p\t0.01s\ndone", 0),
		codexShell("c2", "git log --oneline | head -3"), codexOutput("c2", "abc123 fix: error handling", 0))
	got := localAll(t, doc)["Errors"]
	want := []string{"`go test ./... ; echo done`: --- FAIL: TestParse (0.00s) [unresolved]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// A command's outcome is read by ctx-budget's classifier of command output (issue 39): the
// error of a failed test run is the line that says what failed, not a warning before it
// that holds the word "Failed", nor a passing test whose name holds "exception"; the
// summary is the run's closing count.
func TestOutcomeReadByTheClassifier(t *testing.T) {
	var s cc
	s.user("fix the cache tests")
	s.call("1", "Bash", `{"command":"uv run pytest -v tests/test_cache.py"}`)
	s.result("1", "Exit code 1\nwarning: Failed to hardlink files; falling back to full copy.\n"+
		"tests/test_cache.py::TestCache::test_exception_handling PASSED [ 50%]\n"+
		"tests/test_cache.py::TestCache::test_load FAILED [100%]\n"+
		"E       AssertionError: assert 3 == 4\n"+
		"========================= 1 failed, 1 passed in 0.21s =========================", true)
	s.assistant("The load test fails.")
	sections := localAll(t, s.doc())
	want := "`uv run pytest -v tests/test_cache.py`: tests/test_cache.py::TestCache::test_load FAILED [100%] [unresolved]"
	if got := sections["Errors"]; len(got) != 1 || got[0] != want {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	wantCmd := "`uv run pytest -v tests/test_cache.py` → exit 1: ========================= 1 failed, 1 passed in 0.21s ========================="
	if got := sections["Commands and tests"]; len(got) != 1 || !strings.HasPrefix(got[0], wantCmd) {
		t.Errorf("commands:\n%s\nwant it to start with\n%s", strings.Join(got, "\n"), wantCmd)
	}
}
