package pipeline_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/ctxkit/ctxkit/internal/trim"
)

func generate(t *testing.T, format string, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := testgen.Generate(&b, testgen.Options{Format: format, Size: size, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// counting counts the texts it is asked to count, to tell a document counted again.
type counting struct {
	tokens.Counter
	n *atomic.Int64
}

func (c counting) Count(s string) int { c.n.Add(1); return c.Counter.Count(s) }

// env is a run's environment with no count cache, and the run's Env as a tool that runs
// the pipeline makes it (the counter of its --tokenizer).
func env(t *testing.T, vars map[string]string) (func(string) string, *pipeline.Env, *atomic.Int64) {
	t.Helper()
	vars["CTX_CACHE_DIR"] = "off"
	getenv := func(k string) string { return vars[k] }
	c, err := cli.Configure(trim.Tool(), nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return getenv, &pipeline.Env{Tokenizer: c.Tokenizer(), Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
		counter, err := c.Counter(f, model)
		return counting{counter, &n}, err
	}}, &n
}

// still is a tier that never changes a document but measures it.
type still struct{ planned *int }

func (still) Name() string { return "still" }
func (still) Measuring() pipeline.Measuring {
	return pipeline.Measuring{Reading: pipeline.Reading{Tokenizer: "auto"}}
}
func (s still) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	*s.planned++
	if _, err := d.Measure(s.Measuring()); err != nil {
		return nil, err
	}
	return &pipeline.Plan{}, nil
}

// A tier that changes nothing hands the next one the same Doc: no parse, no count.
func TestNoEditsKeepTheDoc(t *testing.T) {
	raw := generate(t, "anthropic", 60_000)
	_, e, counted := env(t, map[string]string{})
	d, err := pipeline.New(raw, transcript.Options{}, e, pipeline.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	planned := 0
	p := &pipeline.Pipeline{Stages: []pipeline.Stage{{Name: "a", Tier: still{&planned}}, {Name: "b", Tier: still{&planned}}, {Name: "c", Tier: still{&planned}}}}
	out, results, err := p.Run(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out != d || planned != 3 || len(results) != 3 {
		t.Fatalf("got doc %p (want %p), %d plans, %d results", out, d, planned, len(results))
	}
	first := counted.Load()
	if first == 0 {
		t.Fatal("nothing counted")
	}
	// The counts were made by the first stage; the others read them.
	if _, err := d.Measure(still{}.Measuring()); err != nil {
		t.Fatal(err)
	}
	if counted.Load() != first {
		t.Errorf("counted %d texts after the first measure, want none", counted.Load()-first)
	}
	for _, r := range results {
		if &r.In[0] != &raw[0] || &r.Out[0] != &raw[0] || r.Stats == nil || r.Stats.TokensBefore != r.Stats.TokensAfter {
			t.Errorf("%s: a stage that changed nothing: in/out not the input, or stats %+v", r.Stage, r.Stats)
		}
	}
}

// A Doc made from another's own bytes (a caller that parsed the document to check it
// before running the stages) shares its parse and counts, under its own clock.
func TestNewFromTheSameBytes(t *testing.T) {
	raw := generate(t, "anthropic", 60_000)
	_, e, counted := env(t, map[string]string{})
	d, err := pipeline.New(raw, transcript.Options{}, e, pipeline.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	m := still{}.Measuring()
	want, err := d.Tokens(m)
	if err != nil {
		t.Fatal(err)
	}
	first := counted.Load()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	again, err := pipeline.NewFrom(d, raw, transcript.Options{}, e, pipeline.Clock{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Tokens(m)
	if err != nil {
		t.Fatal(err)
	}
	if again.T != d.T || got != want || counted.Load() != first || !again.Clock.Now.Equal(now) {
		t.Errorf("parse shared %v, tokens %d (want %d), counted %d texts again, clock %v", again.T == d.T, got, want, counted.Load()-first, again.Clock.Now)
	}
	// A copy of the bytes is read from d, as a next request is.
	copied, err := pipeline.NewFrom(d, bytes.Clone(raw), transcript.Options{}, e, pipeline.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	if copied.T == d.T {
		t.Error("a copy of the bytes took the parse of the original")
	}
}

// tierArgs are, for each tier, command lines that make it act on the generated documents
// below, and one left at its defaults.
var tierArgs = map[string][][]string{
	"ctx-persist":   {nil, {"--threshold", "3KB"}, {"--threshold", "3KB", "--preview", "0"}},
	"ctx-budget":    {nil, {"--cap", "2000"}, {"--window", "20k", "--high-cap", "1500"}},
	"ctx-snip":      {nil, {"--window", "20k"}, {"--window", "20k", "--keep", "1", "--clear-inputs"}},
	"ctx-summarize": {nil, {"--window", "20k"}, {"--window", "30k", "--keep-first"}},
	"ctx-trim":      {nil, {"--window", "20k"}, {"--max-tokens", "8k", "--strategy", "first"}},
}

// Each tier as a value gives what its command gives: the same bytes and the same --stats
// line, on each format, when it acts and when it does not.
func TestTiersAreTheirCommands(t *testing.T) {
	docs := map[string][]byte{}
	for _, format := range testgen.Formats {
		docs[format] = generate(t, format, 120_000)
	}
	for _, tr := range tiers.All() {
		if tr.New == nil {
			continue
		}
		acted := 0
		for _, format := range testgen.Formats {
			raw := docs[format]
			for _, args := range tierArgs[tr.Name] {
				name := tr.Name + " " + strings.Join(args, " ") + " on " + format
				want, line := runCommand(t, tr.Main, args, raw, format)
				got, st := runTier(t, tr.New, args, raw, format)
				if !bytes.Equal(got, want) {
					t.Errorf("%s: the tier's output differs from the command's (%d bytes, want %d)", name, len(got), len(want))
				}
				// The command names its input; a stage's input has no name.
				if w := strings.Replace(string(line), `"file":"-"`, `"file":""`, 1); st != w {
					t.Errorf("%s: stats\n got %s\nwant %s", name, st, w)
				}
				if !bytes.Equal(want, raw) {
					acted++
				}
			}
		}
		if acted == 0 {
			t.Errorf("%s acted on no document: the test holds nothing", tr.Name)
		}
	}
}

// stageVars are the variables a tool that runs a pipeline sets for its stages: a store of
// its own (each run its own, so that what one stored is new to the other), named as the
// placeholders show it.
func stageVars(t *testing.T, format string) map[string]string {
	return map[string]string{"CTX_FORMAT": format, "CTX_STORE": t.TempDir(), cli.StoreShownEnv: "/pipeline/store",
		"CTX_NOW": "2026-01-02T03:04:05Z"}
}

// runCommand runs a tier's command on raw as a stage would, and returns its output and
// its --stats line.
func runCommand(t *testing.T, main cli.MainFunc, args []string, raw []byte, format string) ([]byte, []byte) {
	t.Helper()
	vars := stageVars(t, format)
	statsFile := filepath.Join(t.TempDir(), "stats")
	vars["CTX_STATS_FILE"] = statsFile
	getenv, _, _ := env(t, vars)
	var out, errs bytes.Buffer
	if code := main(args, bytes.NewReader(raw), &out, &errs, getenv); code != 0 {
		t.Fatalf("%v: exited %d: %s", args, code, errs.String())
	}
	line, err := os.ReadFile(statsFile)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), line
}

// runTier runs a tier as the one stage of a pipeline, and returns its output and its stats
// as a line.
func runTier(t *testing.T, newTier func([]string, func(string) string) (pipeline.Tier, error), args []string, raw []byte, format string) ([]byte, string) {
	t.Helper()
	vars := stageVars(t, format)
	now, _ := time.Parse(time.RFC3339, vars["CTX_NOW"])
	delete(vars, "CTX_NOW") // the pipeline's clock says it
	getenv, e, _ := env(t, vars)
	tier, err := newTier(args, getenv)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.New(raw, transcript.Options{Format: transcript.Format(format)}, e, pipeline.Clock{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline.Pipeline{Stages: []pipeline.Stage{{Name: tier.Name(), Tier: tier}}}
	out, results, err := p.Run(context.Background(), d, getenv)
	if err != nil {
		t.Fatal(err)
	}
	line, err := results[0].Stats.Marshal(tier.Name())
	if err != nil {
		t.Fatal(err)
	}
	return out.Raw, string(line)
}

// A tier whose flags read the document otherwise than the pipeline did runs as its
// command.
func TestOtherReadingRunsTheCommand(t *testing.T) {
	raw := generate(t, "anthropic", 60_000)
	getenv, e, _ := env(t, map[string]string{})
	tier, err := trim.New([]string{"--tokenizer", "o200k", "--window", "20k"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	main := func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
		ran++
		return trim.Main(args, stdin, stdout, stderr, getenv)
	}
	d, err := pipeline.New(raw, transcript.Options{}, e, pipeline.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline.Pipeline{Stages: []pipeline.Stage{{Name: "ctx-trim", Tier: tier, Main: main, Args: []string{"--tokenizer", "o200k", "--window", "20k"}}}}
	out, results, err := p.Run(context.Background(), d, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 1 || results[0].Stats != nil {
		t.Fatalf("the command ran %d times; stats as a tier's: %v", ran, results[0].Stats)
	}
	if bytes.Equal(out.Raw, raw) || out.T == nil || len(out.T.Messages) >= len(d.T.Messages) {
		t.Errorf("the command's output is not the next Doc")
	}
	// Told before the run: a stage runs its command, so the stats file is read.
	p.Env = e
	reading := transcript.Options{Format: transcript.Anthropic}
	if p.InProcess(reading) {
		t.Error("InProcess with a stage that counts with its own --tokenizer")
	}
	same, err := trim.New([]string{"--window", "20k"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	p.Stages[0].Tier = same
	if !p.InProcess(reading) || p.InProcess(transcript.Options{}) {
		t.Errorf("InProcess %v for the tier as the pipeline reads, %v with the format not named; want true, false", p.InProcess(reading), p.InProcess(transcript.Options{}))
	}
}
