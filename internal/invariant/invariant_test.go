package invariant

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// recorder collects what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

const doc = `{"model":"m","system":"sys","messages":[` +
	`{"role":"user","content":"first question"},` +
	`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long old result"}]},` +
	`{"role":"assistant","content":"answer"},` +
	`{"role":"user","content":"newest question"}]}`

func replace(old, new string) Transform {
	return func(in []byte) ([]byte, error) { return bytes.Replace(in, []byte(old), []byte(new), 1), nil }
}

func TestCheckCatchesViolations(t *testing.T) {
	cases := []struct {
		name string
		tr   Transform
		want string // "" means no error
	}{
		{"identity", func(in []byte) ([]byte, error) { return in, nil }, ""},
		{"shrinks an old result", replace("a long old result", "[cut]"), ""},
		{"changes the envelope", replace(`"model":"m"`, `"model":"x"`), "outside the messages"},
		{"grows a result", replace("a long old result", "a much much longer old result than before"), "tokens went up"},
		{"touches the newest user message", replace("newest question", "newest"), "protected message"},
		{"touches the system prompt", replace(`"system":"sys"`, `"system":"s"`), "protected message"},
		{"not idempotent", func(in []byte) ([]byte, error) { return bytes.Replace(in, []byte(`result"`), []byte(`resul"`), 1), nil }, "not idempotent"},
		{"drops a result", replace(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long old result"}]},`, ""), "messages became"},
		{"breaks the JSON", replace(`"answer"`, `"answer`), "output does not parse"},
		{"changes the format", func([]byte) ([]byte, error) { return []byte(`[{"role":"user","content":"x"}]`), nil }, "output is openai"},
		{"fails", func([]byte) ([]byte, error) { return nil, fmt.Errorf("boom") }, "boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, "doc.json", []byte(doc), c.tr, Options{Lossy: true})
			got := strings.Join(r.errs, "\n")
			if c.want == "" && got != "" {
				t.Errorf("unexpected: %s", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("want %q, got %q", c.want, got)
			}
		})
	}
}

func TestOrphanCheck(t *testing.T) {
	// Renaming the result's id leaves the call unanswered and the result without a call.
	r := &recorder{TB: t}
	Check(r, "doc.json", []byte(doc), replace(`"tool_use_id":"t1"`, `"tool_use_id":"zz"`), Options{})
	if !strings.Contains(strings.Join(r.errs, "\n"), "unpaired") {
		t.Errorf("orphan not caught: %v", r.errs)
	}
}

func TestIdentity(t *testing.T) {
	r := &recorder{TB: t}
	Identity(r, "doc.json", []byte(doc), replace("answer", "answe"))
	if len(r.errs) != 1 {
		t.Errorf("want one error, got %v", r.errs)
	}
}

func TestDropsCheck(t *testing.T) {
	const (
		first  = `{"role":"user","content":"first question"},`
		call   = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]},`
		result = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long old result"}]},`
		opener = `{"role":"user","content":[{"type":"text","text":"(earlier messages dropped)"}]},`
	)
	cases := []struct {
		name string
		tr   Transform
		want string // "" means no error
	}{
		{"identity", func(in []byte) ([]byte, error) { return in, nil }, ""},
		{"drops the oldest message", replace(first, ""), ""},
		{"drops a call with its result", replace(first+call+result, ""), ""},
		{"puts an allowed opener first", replace(first+call+result, opener), ""},
		{"drops the call, keeps the result", replace(call, ""), "were separated"},
		{"drops the result, keeps the call", replace(result, ""), "were separated"},
		{"drops the newest user message", replace(`,{"role":"user","content":"newest question"}`, ""), "protected message 5 (user) was dropped"},
		{"changes a kept message", replace("first question", "first"), "not a block of the input"},
		{"adds a message", replace(first, first+`{"role":"user","content":"more"},`), "not a block of the input"},
		{"reorders messages", replace(first+call+result, call+result+first), "out of order"},
		{"cuts a block out of a message", replace(`[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]`, `[{"type":"text","text":"x"}]`), "not a block of the input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, "doc.json", []byte(doc), c.tr, Options{Lossy: true, Structural: true, Drops: true, Added: []string{"(earlier messages dropped)"}})
			got := strings.Join(r.errs, "\n")
			if c.want == "" && got != "" {
				t.Errorf("unexpected: %s", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("want %q, got %q", c.want, got)
			}
		})
	}
	// A message kept in part: two blocks, one of them gone.
	two := `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":"c"}]`
	r := &recorder{TB: t}
	Check(r, "two.json", []byte(two), replace(`{"type":"text","text":"a"},`, ""), Options{Structural: true, Drops: true})
	if got := strings.Join(r.errs, "\n"); !strings.Contains(got, "lost 1 of its 2 blocks") {
		t.Errorf("a message kept in part is not caught: %q", got)
	}
}

// The identity transform passes every check on every sample and corpus file, so the
// checker itself reads them all correctly.
func TestIdentityPassesEverywhere(t *testing.T) {
	files := Samples(t)
	if testing.Short() {
		files = files[:2]
	} else if _, err := os.Stat("../../../shared/corpus"); err == nil {
		files = append(files, CorpusFiles(t)...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		Check(t, f, data, func(in []byte) ([]byte, error) { return in, nil }, Options{Lossy: true})
	}
}

func TestFolder(t *testing.T) {
	if got := Folder("/x/shared/corpus/tau-bench/task1.json"); got != "tau-bench" {
		t.Errorf("Folder = %q", got)
	}
}
