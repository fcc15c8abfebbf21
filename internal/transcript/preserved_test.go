package transcript

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A Claude Code compaction that keeps the newest messages as they were
// (compactMetadata.preservedSegment) writes its boundary and summary after them, and what
// follows chains on from the last one kept, while the first kept still names the message
// before it. Claude Code relinks that first one to the summary when it reads the log; so
// does the reader: the live conversation is the messages kept, the summary and what
// follows, without the history the summary replaced and without a warning (the chain
// reached the session's first message while the summary hung off the boundary, and the
// whole file was read in line order). The kept messages' figures measured the context
// before the compaction and are left out, as Claude Code sets them to zero.
func TestPreservedSegmentFollowsTheSummary(t *testing.T) {
	usage := func(n int) string {
		return `,"usage":{"input_tokens":3,"cache_creation_input_tokens":` + strconv.Itoa(n) + `,"cache_read_input_tokens":0,"output_tokens":9}`
	}
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"old question"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"old answer"}]` + usage(1000) + `}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"next question"}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.go"}}]` + usage(2000) + `}}`,
		`{"type":"user","uuid":"u3","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"package a"}]}}`,
		`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"u3","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":2000,"preservedSegment":{"headUuid":"a2","anchorUuid":"s1","tailUuid":"u3"}}}`,
		`{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation. Summary: old question answered."}}`,
		`{"type":"assistant","uuid":"a3","parentUuid":"u3","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"a.go is one line"}]` + usage(700) + `}}`,
	}
	doc := strings.Join(lines, "\n") + "\n"
	upTo := func(n int) string { return strings.Join(lines[:n], "\n") + "\n" }
	for _, c := range []struct {
		name  string
		doc   string
		uuids []string
		usage []int
	}{
		{"before the compaction", upTo(5), []string{"u1", "a1", "u2", "a2", "u3"}, []int{1003, 2003}},
		{"the summary newest", upTo(7), []string{"a2", "u3", "s1"}, nil},
		{"after the compaction", doc, []string{"a2", "u3", "s1", "a3"}, []int{703}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Parse([]byte(c.doc), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Warnings) > 0 {
				t.Errorf("warnings: %v", tr.Warnings)
			}
			var uuids []string
			for _, m := range tr.Messages {
				uuids = append(uuids, tr.recordAt(m.Lines[0].Start).UUID)
			}
			var usage []int
			for _, u := range tr.Usage {
				usage = append(usage, u.Input)
			}
			if !slices.Equal(uuids, c.uuids) || !slices.Equal(usage, c.usage) {
				t.Errorf("messages %v with figures %v, want %v with %v", uuids, usage, c.uuids, c.usage)
			}
			for _, r := range tr.Records {
				if r.Message < 0 && (r.Type == "user" || r.Type == "assistant") && r.Left != Compacted {
					t.Errorf("line %d (%s) left out as %v, want compacted", r.Line, r.UUID, r.Left)
				}
			}
		})
	}
}
