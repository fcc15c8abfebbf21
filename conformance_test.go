package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The "no silent loss" conformance test: for every sample (testdata/*.json*) and every
// corpus file (../shared/corpus/**), the messages a tool reads are all the messages the
// document holds, but for those the reader names as left out and why (a dead branch, a
// subagent's sidechain, compacted history, a record that carries no message). The count
// of message-bearing records or elements comes from a reader of the test's own, built on
// encoding/json and nothing the parser uses, so a reader that drops a record without
// saying so is caught whatever it believes. Both ways the tools read a document are held
// to it: Parse (whole) and Stream (one record at a time). Then every tool runs on every
// file: it must accept what its own reader accepts, and the filters below their triggers
// keep every message-bearing record.

// conformanceFiles lists the samples and, when the corpus is there, its files.
func conformanceFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if len(files) == 0 {
		t.Fatal("no samples in testdata")
	}
	corpus := filepath.Join("..", "shared", "corpus")
	if _, err := os.Stat(corpus); err != nil {
		t.Logf("no corpus at %s: samples only", corpus)
		return files
	}
	filepath.WalkDir(corpus, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".traj")) {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// census is what the test's own reader finds in a document.
type census struct {
	jsonl bool
	// bearing lists the 1-based line numbers of the JSONL records that carry a message;
	// elements counts the elements of a JSON document's message array.
	bearing  []int
	elements int
	// conversation is false for a JSON document with no message array (not a conversation).
	conversation bool
}

// takeCensus reads doc with encoding/json. A record carries a message when it is a
// Claude Code user or assistant record with a message object, or a Codex response_item or
// compacted record. A JSON document's message array is the document itself when it is an
// array, or its "messages", "input" or "history" field, in that order.
func takeCensus(t *testing.T, name string, doc []byte) census {
	t.Helper()
	var c census
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 {
		return census{jsonl: true, conversation: true}
	}
	if !json.Valid(trimmed) || oneRecord(trimmed) {
		c.jsonl, c.conversation = true, true
		for i, line := range bytes.Split(doc, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var rec struct {
				Type    string          `json:"type"`
				Message json.RawMessage `json:"message"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s: line %d: %v", name, i+1, err)
			}
			switch {
			case (rec.Type == "user" || rec.Type == "assistant") && bytes.HasPrefix(bytes.TrimSpace(rec.Message), []byte("{")),
				rec.Type == "response_item", rec.Type == "compacted":
				c.bearing = append(c.bearing, i+1)
			}
		}
		return c
	}
	var arr []json.RawMessage
	if json.Unmarshal(trimmed, &arr) == nil {
		return census{elements: len(arr), conversation: true}
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &root); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, key := range []string{"messages", "input", "history"} {
		if json.Unmarshal(root[key], &arr) == nil && root[key] != nil && bytes.HasPrefix(bytes.TrimSpace(root[key]), []byte("[")) {
			return census{elements: len(arr), conversation: true}
		}
		var s string
		if key == "input" && json.Unmarshal(root[key], &s) == nil {
			return census{elements: 1, conversation: true}
		}
	}
	return census{}
}

// validLines reports whether every non-blank line of doc is a JSON value.
func validLines(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) {
			return false
		}
	}
	return true
}

// oneRecord reports whether a single JSON value is a JSONL log of one record: an object
// with a "type" and none of the fields that hold a message array.
func oneRecord(doc []byte) bool {
	var root map[string]json.RawMessage
	if json.Unmarshal(doc, &root) != nil {
		return false
	}
	var typ string
	_, m := root["messages"]
	_, i := root["input"]
	_, h := root["history"]
	return json.Unmarshal(root["type"], &typ) == nil && typ != "" && !m && !i && !h
}

// accountFor checks that a parsed transcript reads or names every message-bearing record
// or element the census found.
func accountFor(t *testing.T, name, how string, c census, tr *transcript.Transcript) {
	t.Helper()
	if !c.jsonl {
		n := 0
		for _, m := range tr.Messages {
			if !m.Header {
				n++
			}
		}
		if n != c.elements {
			t.Errorf("%s (%s): %d messages read of %d elements in the message array", name, how, n, c.elements)
		}
		return
	}
	byLine := map[int]transcript.Record{}
	for _, r := range tr.Records {
		byLine[r.Line] = r
	}
	read, named := 0, map[transcript.Left]int{}
	for _, line := range c.bearing {
		r, ok := byLine[line]
		switch {
		case !ok:
			t.Errorf("%s (%s): line %d carries a message but is not a record", name, how, line)
		case r.Message >= 0 && r.Left == transcript.Read:
			read++
		case r.Message < 0 && r.Left != transcript.Read && r.Left != transcript.NotMessage:
			named[r.Left]++
		default:
			t.Errorf("%s (%s): line %d carries a message, but is neither read nor left out for a named reason (message %d, %v)", name, how, line, r.Message, r.Left)
		}
	}
	if t.Failed() {
		return
	}
	total := read
	for _, n := range named {
		total += n
	}
	if total != len(c.bearing) {
		t.Errorf("%s (%s): %d read + %v named = %d, want %d", name, how, read, named, total, len(c.bearing))
	}
}

// scriptDocs are the documents of the testscript scripts, which are made to break the
// rules: name to text.
func scriptDocs(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, d := range invariant.ScriptDocuments(t) {
		docs[filepath.Join("testdata", "script", d.Script)+"/"+d.Name] = d.Data
	}
	return docs
}

func TestNoSilentLoss(t *testing.T) {
	docs := map[string][]byte{}
	for _, f := range conformanceFiles(t) {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = doc
	}
	scripts := scriptDocs(t)
	for name, doc := range scripts {
		docs[name] = doc
	}
	checked := 0
	for f, doc := range docs {
		if _, script := scripts[f]; script {
			// The scripts hold documents made to be refused: refusing is not losing.
			if _, err := transcript.Parse(doc, transcript.Options{}); err != nil || !json.Valid(bytes.TrimSpace(doc)) && !validLines(doc) {
				continue
			}
		}
		c := takeCensus(t, f, doc)
		for _, side := range []bool{false, true} {
			o := transcript.Options{Name: f, Sidechains: side}
			tr, err := transcript.Parse(doc, o)
			if !c.conversation {
				if err == nil {
					t.Errorf("%s: not a conversation, yet read as one of %d messages", f, len(tr.Messages))
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			accountFor(t, f, "parse", c, tr)
			if _, script := scripts[f]; len(tr.Warnings) > 0 && !script {
				t.Errorf("%s: the reader departed from the format's rules: %q", f, tr.Warnings)
			}
			if !c.jsonl {
				continue
			}
			var carried [][]transcript.Message
			outline, _, err := transcript.Stream(bytes.NewReader(doc), o, func(_ int, rec *transcript.Transcript) error {
				carried = append(carried, rec.Messages)
				return nil
			})
			if err != nil {
				t.Errorf("%s: stream: %v", f, err)
				continue
			}
			if outline != nil { // an empty log is read whole
				accountFor(t, f, "stream", c, outline.Conversation(carried))
			}
		}
		checked++
	}
	t.Logf("%d documents accounted for", checked)
}

// TestEveryToolKeepsEveryMessage runs every tool on every file (24 corpus files in the
// quick loop, all with CTXKIT_LONG=1): each accepts what the reader accepts, and the
// filters, below their triggers on these documents, keep every message-bearing record or
// element (they may change what a message holds, never drop it). ctx-repair and ctx-convert change structure by design (merging, converting) and
// are held only to accepting the input.
func TestEveryToolKeepsEveryMessage(t *testing.T) {
	store := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "CTX_CACHE_DIR":
			return "off"
		case "CTX_STORE":
			return store
		}
		return ""
	}
	files := conformanceFiles(t)
	if !invariant.IsLong() { // the quick loop: the samples and 24 corpus files (every folder)
		samples, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
		files = append(files[:len(samples):len(samples)], invariant.Quick(files[len(samples):], 24)...)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := takeCensus(t, f, doc)
		if !c.conversation {
			continue
		}
		for _, tool := range []string{"ctx-count", "ctx-persist", "ctx-budget", "ctx-snip", "ctx-summarize", "ctx-trim", "ctx-repair", "ctx-convert"} {
			args := []string{f}
			if tool == "ctx-convert" {
				to := "openai"
				if tr, err := transcript.Parse(doc, transcript.Options{}); err == nil && tr.Format == transcript.OpenAI {
					to = "anthropic"
				}
				args = []string{"--to", to, f}
			}
			var out, errb bytes.Buffer
			code := runTool(tool, args, &out, &errb, getenv)
			if code != 0 {
				t.Errorf("%s %s: exit %d: %s", tool, f, code, errb.String())
				continue
			}
			if strings.Contains(errb.String(), "do not chain") {
				t.Errorf("%s %s: %s", tool, f, errb.String())
			}
			switch tool {
			case "ctx-count", "ctx-repair", "ctx-convert":
				continue
			}
			if after := takeCensus(t, f+" after "+tool, out.Bytes()); len(after.bearing) != len(c.bearing) || after.elements != c.elements {
				t.Errorf("%s %s: %d records / %d elements in, %d / %d out", tool, f, len(c.bearing), c.elements, len(after.bearing), after.elements)
			}
		}
	}
}

// runTool runs a binary's entry point in-process.
func runTool(tool string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return mains[tool](args, strings.NewReader(""), stdout, stderr, getenv)
}
