package count

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// RepayRequests is the horizon --savings judges a tier's edit by: it must pay back the
// prompt cache it breaks within this many requests, ctx-snip's --repay default.
var RepayRequests = snip.Defaults().Repay

// addSavings runs each tier, with its defaults and the run's window, on the document as it
// is, and says in r.Tiers what it would save, how much of the prompt it would take out of
// the cache (every token from its first change on), and whether the saving pays that back
// within RepayRequests requests at the model's cache prices. The tiers' offload stores go
// to a temporary directory, removed after, unless --store names one.
func addSavings(d *cli.Doc, r *Report) error {
	ctx := d.Context()
	work, err := os.MkdirTemp("", "ctx-count-")
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("--savings: make a work directory: %w", err))
	}
	defer os.RemoveAll(work)
	stats := filepath.Join(work, "stats.jsonl")
	// The user's reading and measuring flags, the window the report measured against (so
	// every tier sees the same), and a store of the run's own unless --store names one.
	env := ctx.CommonEnv()
	if !ctx.Given("store") {
		// The tiers name the store a run of theirs with the same flags would use, not the
		// temporary one, so that what they would save does not depend on where it is.
		shown, err := filepath.Abs(ctx.Common.Store)
		if err != nil {
			return cli.RuntimeError(fmt.Errorf("--savings: store %q: %w", ctx.Common.Store, err))
		}
		env["CTX_STORE"] = filepath.Join(work, "store")
		env[cli.StoreShownEnv] = shown
	}
	env["CTX_STATS_FILE"] = stats
	env["CTX_FORMAT"] = string(d.T.Format)
	env["CTX_WINDOW"] = strconv.Itoa(r.Window)
	env["CTX_RESERVE"] = strconv.Itoa(r.Reserve)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return ctx.Getenv(k)
	}
	doc := []byte(d.T.Doc)
	price := tokens.PriceOf(r.Model, measure.ProviderOf(d.T.Format))
	// Every tier plans on the one document, parsed and counted once (package pipeline),
	// but for one whose flags read it otherwise, which runs as its command.
	penv, err := cli.StageEnv(getenv)
	if err != nil {
		return err
	}
	defer penv.Flush()
	shared, err := pipeline.New(doc, d.ReadOptions(), penv, pipeline.Clock{})
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("--savings: %w", err))
	}
	for i := range r.Tiers {
		tier, ok := tiers.Lookup(r.Tiers[i].Tool)
		if !ok {
			continue
		}
		stage := pipeline.Stage{Name: tier.Name, Main: pipeline.MainFunc(tier.Main), Args: []string{"-"}}
		if tier.New != nil {
			// (a command line the tier refuses runs as its command, which says why)
			if tv, err := tier.New(nil, getenv); err == nil {
				stage.Tier = tv
			}
		}
		os.Remove(stats)
		p := pipeline.Pipeline{Stages: []pipeline.Stage{stage}, StatsFile: stats}
		next, results, err := p.Run(context.Background(), shared, getenv)
		var se *pipeline.StageError
		switch {
		case errors.As(err, &se) && se.Err == nil:
			return cli.RuntimeError(fmt.Errorf("--savings: %s exited %d: %s", r.Tiers[i].Tool, se.Code, lastLine(se.Stderr)))
		case errors.As(err, &se) && se.Code == cli.ExitInput:
			return cli.RuntimeError(fmt.Errorf("--savings: %s wrote what does not read: %w", r.Tiers[i].Tool, se.Err))
		case err != nil:
			return cli.RuntimeError(fmt.Errorf("--savings: %w", err))
		}
		var st struct {
			Saved   int    `json:"saved"`
			Items   int    `json:"items"`
			Trigger string `json:"trigger"`
		}
		if line, err := results[0].StatsLine(); err == nil {
			json.Unmarshal(line, &st)
		}
		out := next.Raw
		saves, uncached := 0, 0
		if st.Items > 0 && !bytes.Equal(out, doc) {
			saves = st.Saved
			uncached = uncachedBy(d.T, next.T, r)
		}
		repays := saves > 0 && price.Repays(saves, uncached, RepayRequests)
		t := &r.Tiers[i]
		t.Saves, t.Uncached, t.Repays = &saves, &uncached, &repays
		// The tier's own decision, not its trigger alone: above it, ctx-snip still clears
		// nothing that would not repay the cache, or nothing stale.
		acts := st.Items > 0 && !bytes.Equal(out, doc)
		switch {
		case t.Acts && !acts:
			why := "it changes nothing"
			if _, after, ok := strings.Cut(st.Trigger, ": "); ok && after != "" {
				why = after
			}
			t.Reason += "; run with the same flags, " + why
		case !t.Acts && acts:
			t.Reason += "; run with the same flags, it acts all the same"
			if st.Trigger != "" {
				t.Reason += " (" + st.Trigger + ")"
			}
		}
		t.Acts = acts
	}
	return nil
}

// uncachedBy is what changing the conversation before into after takes out of the prompt
// cache: the tokens of before from its first message that after does not hold as it was,
// byte for byte, to the end (and the tool schemas, when they changed). Messages are
// compared as sent, not the file's bytes: a Claude Code summary is appended to the log but
// replaces the history before it.
func uncachedBy(before, after *transcript.Transcript, r *Report) int {
	k := 0
	for k < len(before.Messages) && k < len(after.Messages) && before.MessageBytes(k) == after.MessageBytes(k) {
		k++
	}
	n := 0
	if before.Slice(before.Tools) != after.Slice(after.Tools) {
		n += r.ByKind["tools"]
		k = 0
	}
	for mi := k; mi < len(r.Messages); mi++ {
		n += r.Messages[mi].Tokens
	}
	return n
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
