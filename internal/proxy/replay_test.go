package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// replayPipe acts on every large session and its output depends on the history it is
// given: results are cut to 2,000 characters, snip clears old ones from 30% of a 60K window
// (its cache gates off, so it acts whenever it is over), and trim drops the oldest past the
// window. Piping the agent's whole history afresh each turn gives other bytes than piping
// the last sent history plus the new messages, so the comparison tests the proxy's
// conversation state, not only that both run the same tiers.
const replayPipe = "ctx-budget --cap 2000 | ctx-snip --window 60000 --trigger 30% --keep 2 --clear-at-least 0 --repay 0 | ctx-trim --window 60000"

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
		t.Run(filepath.Base(f), func(t *testing.T) { compareSession(t, f, false) })
	}
}

// What Claude Code sends carries cache_control markers the session file does not hold: two
// on its system blocks and one on the newest message, moved each turn. The proxy keeps the
// markers it sent last turn in the history it resends, dropping the oldest beyond the API's
// four, so its bytes differ from replay's where a marker sits; with every marker taken out,
// the messages sent must be replay's, turn by turn, and each request must hold at most four
// markers with the client's newest one kept.
func TestProxySendsWhatReplaySendsWithMarkers(t *testing.T) {
	if testing.Short() {
		t.Skip("replays whole sessions")
	}
	n := 3 // the quick loop: the largest session (the three took most of this package's time)
	if !invariant.IsLong() {
		n = 1
	}
	for _, f := range largestSessions(t, n) {
		t.Run(filepath.Base(f), func(t *testing.T) { compareSession(t, f, true) })
	}
}

// markedSystem is a system prompt with Claude Code's two markers.
const markedSystem = `[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral"}},` +
	`{"type":"text","text":"Work in the current folder.","cache_control":{"type":"ephemeral"}}]`

// compareSession replays the session f through ctx-replay and through the proxy and
// compares what each sent at every turn; marked sends the proxy Claude Code's markers.
func compareSession(t *testing.T, f string, marked bool) {
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
	full := conv.Doc
	if marked {
		// replay sees the same system prompt, without its markers: what the tiers
		// measure must be the same on both sides
		if full, err = sjson.SetRawBytes(full, "system", []byte(unmarkedSystem())); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := transcript.Parse(full, transcript.Options{Format: transcript.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	points := replay.Points(doc)

	// ctx-replay's side: what it sends at each turn.
	pipe, err := replay.ParsePipe(replayPipe, replay.Tools())
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
	srv, ts, log := proxyFor(t, up.URL, replayPipe, t.TempDir())
	// the same store: a placeholder names the file its text went to
	srv.Env["CTX_STORE"] = env["CTX_STORE"]
	start = time.Now()
	for i, p := range points {
		body := p.Request(doc)
		if marked {
			body = markLikeClaudeCode(t, body)
		}
		resp, err := http.Post(ts.URL+"/v1/messages", "application/json", bytes.NewReader(body))
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

	same, bytewise, acted, firstDiff := 0, 0, 0, ""
	for i := range got {
		if !bytes.Equal(replayed[i], points[i].Request(doc)) {
			acted++
		}
		if marked {
			if n := markers(got[i].Body); n > MaxMarkers {
				t.Errorf("turn %d: %d cache_control markers", i+1, n)
			}
			msgs := gjson.GetBytes(got[i].Body, "messages").Array()
			newest := msgs[len(msgs)-1]
			if newest.Get("content").IsArray() && !strings.Contains(newest.Raw, `"cache_control"`) {
				t.Errorf("turn %d: the newest message lost the client's marker: %.600s", i+1, newest.Raw)
			}
		}
		if bytes.Equal(got[i].Body, replayed[i]) {
			bytewise++
		}
		if marked && sameUnmarked(got[i].Body, replayed[i]) || bytes.Equal(got[i].Body, replayed[i]) {
			same++
		} else if firstDiff == "" {
			firstDiff = fmt.Sprintf("turn %d: %s", i+1, whereDiffer(replayed[i], got[i].Body))
		}
	}
	t.Logf("%s (markers %v): %d turns, %d identical (%d byte for byte), %d changed by the pipeline; %d -> %d bytes at the last turn; replay %v, proxy %v",
		filepath.Base(f), marked, len(got), same, bytewise, acted, len(points[len(points)-1].Request(doc)), len(got[len(got)-1].Body),
		replayTime.Round(time.Millisecond), proxyTime.Round(time.Millisecond))
	if acted == 0 {
		t.Errorf("the pipeline changed no turn: the comparison proves nothing")
	}
	if same != len(got) {
		t.Errorf("%d of %d turns differ; first %s\nlog: %.2000s", len(got)-same, len(got), firstDiff, lines)
	}
}

func unmarkedSystem() string {
	out, _ := sjson.Delete(markedSystem, "0.cache_control")
	out, _ = sjson.Delete(out, "1.cache_control")
	return out
}

// markLikeClaudeCode gives body Claude Code's markers: its system prompt's two and one on
// the last block of the newest message (none where that message is a plain string).
func markLikeClaudeCode(t *testing.T, body []byte) []byte {
	out, err := sjson.SetRawBytes(body, "system", []byte(markedSystem))
	if err != nil {
		t.Fatal(err)
	}
	msgs := gjson.GetBytes(out, "messages").Array()
	last := len(msgs) - 1
	content := msgs[last].Get("content")
	if !content.IsArray() || len(content.Array()) == 0 {
		return out // a plain string has no block to mark
	}
	blocks := content.Array()
	path := fmt.Sprintf("messages.%d.content.%d.cache_control", last, len(blocks)-1)
	if out, err = sjson.SetRawBytes(out, path, []byte(`{"type":"ephemeral"}`)); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameUnmarked reports whether two requests send the same messages once every marker is
// taken out.
func sameUnmarked(a, b []byte) bool {
	x, y := gjson.GetBytes(a, "messages").Array(), gjson.GetBytes(b, "messages").Array()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if canonical(x[i].Raw) != canonical(y[i].Raw) {
			return false
		}
	}
	return true
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
