package persist

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-persist reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// storeState lists a store's files with their contents, and its index lines without the
// time they were written.
func storeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if filepath.Base(p) == "index.jsonl" {
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				lines = append(lines, "index "+gjson.Get(l, `@this|{hash,tool,tool_call_id,bytes,lines,tokens,source}`).Raw)
			}
			return nil
		}
		lines = append(lines, rel+" "+string(data))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-persist streaming the file, or
// stdin, writes the same bytes, the same --stats and the same store as ctx-persist reading
// it whole, at the default threshold and at thresholds that offload many results.
func TestStreamedMatchesWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	var flags [][]string
	for _, f := range [][]string{
		{},
		{"--threshold", "2KB", "--preview", "300"},
		{"--threshold", "500", "--preview", "0", "--sidechains"},
	} {
		flags = append(flags, append([]string{"--store", store}, f...))
	}
	offloaded := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Flags: flags,
		Reset: func() { os.RemoveAll(store) },
		State: func() string { return storeState(t, store) },
	}.Run(t)
	if offloaded < 10 {
		t.Fatalf("only %d runs offloaded anything: the test compares too little", offloaded)
	}
}
