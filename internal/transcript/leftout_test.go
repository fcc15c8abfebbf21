package transcript

import (
	"reflect"
	"strings"
	"testing"
)

// ccDoc writes Claude Code records, one a line: type, uuid, parent ("" is null), and the
// rest of the record's fields.
func ccDoc(recs ...[4]string) string {
	var b strings.Builder
	for _, r := range recs {
		parent := "null"
		if r[2] != "" {
			parent = `"` + r[2] + `"`
		}
		b.WriteString(`{"type":"` + r[0] + `","uuid":"` + r[1] + `","parentUuid":` + parent + `,"sessionId":"s"` + r[3] + "}\n")
	}
	return b.String()
}

func userMsg(text string) string { return `,"message":{"role":"user","content":"` + text + `"}` }

// TestLeftOut: every record of a Claude Code log is read or left out with its reason, and
// records that do not chain are read in line order with a warning.
func TestLeftOut(t *testing.T) {
	cases := []struct {
		name     string
		doc      string
		left     []Left
		messages int
		warn     string
	}{
		{"unchained", ccDoc(
			[4]string{"user", "a", "", userMsg("1")},
			[4]string{"user", "b", "", userMsg("2")},
			[4]string{"user", "c", "", userMsg("3")},
		), []Left{Read, Read, Read}, 3, "2 of the 3 message records do not chain"},
		{"dangling", ccDoc(
			[4]string{"user", "a", "x", userMsg("1")},
			[4]string{"user", "b", "y", userMsg("2")},
		), []Left{Read, Read}, 2, "1 of the 2 message records"},
		{"rewind", ccDoc(
			[4]string{"user", "a", "", userMsg("1")},
			[4]string{"user", "b", "a", userMsg("2")},
			[4]string{"file-history-snapshot", "", "", ""},
			[4]string{"user", "c", "a", userMsg("3")},
			[4]string{"user", "d", "c", `,"isSidechain":true` + userMsg("4")},
		), []Left{Read, DeadBranch, NotMessage, Read, Sidechain}, 2, ""},
		{"cut branch", ccDoc(
			[4]string{"user", "d", "gone", userMsg("a rewound prompt whose anchor was trimmed")},
			[4]string{"user", "u", "", userMsg("1")},
			[4]string{"user", "v", "u", userMsg("2")},
		), []Left{DeadBranch, Read, Read}, 2, ""},
		{"compaction", ccDoc(
			[4]string{"user", "a", "", userMsg("1")},
			[4]string{"user", "b", "a", userMsg("2")},
			[4]string{"system", "k", "", `,"subtype":"compact_boundary","logicalParentUuid":"b"`},
			[4]string{"user", "c", "k", `,"isCompactSummary":true` + userMsg("summary")},
		), []Left{Compacted, Compacted, NotMessage, Read}, 1, ""},
		{"a tree after the compaction", ccDoc(
			[4]string{"system", "k", "", `,"logicalParentUuid":"z"`},
			[4]string{"user", "c", "k", userMsg("summary")},
			[4]string{"user", "d", "", userMsg("elsewhere")},
			[4]string{"user", "e", "c", userMsg("new")},
		), []Left{NotMessage, Read, Read, Read}, 3, "1 of the 3"},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			var tr *Transcript
			if stream {
				var carried [][]Message
				o, _, err := Stream(strings.NewReader(c.doc), Options{}, func(_ int, rec *Transcript) error {
					carried = append(carried, rec.Messages)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				tr = o.Conversation(carried)
			} else {
				var err error
				if tr, err = Parse([]byte(c.doc), Options{}); err != nil {
					t.Fatal(err)
				}
			}
			var left []Left
			for _, r := range tr.Records {
				left = append(left, r.Left)
			}
			if !reflect.DeepEqual(left, c.left) || len(tr.Messages) != c.messages {
				t.Errorf("%s (stream %v): left %v with %d messages, want %v with %d", c.name, stream, left, len(tr.Messages), c.left, c.messages)
			}
			if got := strings.Join(tr.Warnings, "\n"); (c.warn == "") != (got == "") || !strings.Contains(got, c.warn) {
				t.Errorf("%s (stream %v): warnings %q, want %q", c.name, stream, got, c.warn)
			}
		}
	}
}

// TestCodexLeftOut: the items a compacted record replaces are named as compacted.
func TestCodexLeftOut(t *testing.T) {
	doc := `{"type":"session_meta","payload":{"id":"s"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":"old"}}
{"type":"event_msg","payload":{"type":"token_count"}}
{"type":"compacted","payload":{"message":"summary"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":"new"}}
`
	tr, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var left []Left
	for _, r := range tr.Records {
		left = append(left, r.Left)
	}
	if want := []Left{NotMessage, Compacted, NotMessage, Read, Read}; !reflect.DeepEqual(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
