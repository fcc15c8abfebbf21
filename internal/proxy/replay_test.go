package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// replayPipe acts on every large session: results are cut to 2,000 characters at once and
// snip clears old ones from 30% of a 60K window, so most turns differ from what the agent
// sent and each turn builds on an edited history.
const replayPipe = "ctx-budget --cap 2000 | ctx-snip --window 60000 --trigger 30% --keep 2"

// largestSessions are the n largest Claude Code sessions of the corpus, largest first.
func largestSessions(t *testing.T, n int) []string {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("no corpus at %s", dir)
	}
	size := map[string]int64{}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			size[f] = fi.Size()
		}
	}
	sort.Slice(files, func(i, j int) bool { return size[files[i]] > size[files[j]] })
	return files[:min(n, len(files))]
}

// The proxy sends, turn by turn, the bytes ctx-replay sends with the same pipeline.
//
// The two cannot meet on the session file itself: ctx-replay pipes the session in its own
// format (Claude Code JSONL, whose recorded usage sets each tier's figure), while the proxy
// is given Messages API bodies. So each session is first converted to the Anthropic request
// the agent's history makes (ctx-convert), and both run on that: ctx-replay replays the
// converted document, and the proxy is sent, at each of its request points, the history as
// the agent would have sent it (uncompacted), with its state carrying the last sent history
// from turn to turn. The upstream's body at each turn must be the bytes replay sent.
func TestProxySendsWhatReplaySends(t *testing.T) {
	if testing.Short() {
		t.Skip("replays whole sessions")
	}
	for _, f := range largestSessions(t, 3) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			session, err := transcript.Parse(data, transcript.Options{})
			if err != nil {
				t.Fatal(err)
			}
			conv, err := convert.Convert(session, transcript.Anthropic)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := transcript.Parse(conv.Doc, transcript.Options{Format: transcript.Anthropic})
			if err != nil {
				t.Fatal(err)
			}
			points := replay.Points(doc)

			// ctx-replay's side: what it sends at each turn.
			pipe, err := replay.ParsePipe(replayPipe, replay.Tools)
			if err != nil {
				t.Fatal(err)
			}
			counter, err := tokens.New(tokens.DefaultTokenizer(string(transcript.Anthropic)))
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"CTX_STORE": t.TempDir(), "CTX_CACHE_DIR": "off", "CTX_FORMAT": string(transcript.Anthropic)}
			var replayed [][]byte
			start := time.Now()
			_, err = replay.Replay(context.Background(), doc, replay.Options{
				Pipe: pipe,
				Parse: func(b []byte) (*transcript.Transcript, error) {
					return transcript.Parse(b, transcript.Options{Format: transcript.Anthropic})
				},
				Counter: counter,
				Getenv:  func(string) string { return "" },
				Env:     env,
				Save: func(turn int, out []byte) error {
					replayed = append(replayed, bytes.Clone(out))
					return nil
				},
			}, func(replay.Turn) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			replayTime := time.Since(start)

			// The proxy's side: the agent's uncompacted history at each point.
			up := newUpstream(t)
			_, ts, log := proxyFor(t, up.URL, replayPipe, t.TempDir())
			start = time.Now()
			for i, p := range points {
				resp, err := http.Post(ts.URL+"/v1/messages", "application/json", bytes.NewReader(p.Request(doc)))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("turn %d: status %d", i+1, resp.StatusCode)
				}
			}
			proxyTime := time.Since(start)
			lines := waitLog(t, log, len(points))
			got := up.requests()
			if len(got) != len(replayed) || len(got) != len(points) {
				t.Fatalf("%d points, %d replayed, %d reached the upstream", len(points), len(replayed), len(got))
			}

			same, acted, firstDiff := 0, 0, ""
			for i := range got {
				if !bytes.Equal(replayed[i], points[i].Request(doc)) {
					acted++
				}
				if bytes.Equal(got[i].Body, replayed[i]) {
					same++
				} else if firstDiff == "" {
					firstDiff = fmt.Sprintf("turn %d: %s", i+1, whereDiffer(replayed[i], got[i].Body))
				}
			}
			t.Logf("%s: %d turns, %d identical, %d changed by the pipeline; %d -> %d bytes at the last turn; replay %v, proxy %v",
				filepath.Base(f), len(got), same, acted, len(points[len(points)-1].Request(doc)), len(got[len(got)-1].Body),
				replayTime.Round(time.Millisecond), proxyTime.Round(time.Millisecond))
			if acted == 0 {
				t.Errorf("the pipeline changed no turn: the comparison proves nothing")
			}
			if same != len(got) {
				t.Errorf("%d of %d turns differ; first %s\nlog: %.2000s", len(got)-same, len(got), firstDiff, lines)
			}
		})
	}
}

// whereDiffer says where two requests part: the first message that differs, with a little
// of each.
func whereDiffer(want, got []byte) string {
	w, g := gjson.GetBytes(want, "messages").Array(), gjson.GetBytes(got, "messages").Array()
	for i := 0; i < min(len(w), len(g)); i++ {
		if w[i].Raw != g[i].Raw {
			return fmt.Sprintf("message %d of %d/%d: replay %.300s\nproxy %.300s", i, len(w), len(g), w[i].Raw, g[i].Raw)
		}
	}
	if len(w) != len(g) {
		return fmt.Sprintf("replay sent %d messages, the proxy %d", len(w), len(g))
	}
	k := 0
	for k < min(len(want), len(got)) && want[k] == got[k] {
		k++
	}
	return fmt.Sprintf("same messages, bytes part at %d: replay %.200q proxy %.200q", k, want[k:], got[k:])
}
