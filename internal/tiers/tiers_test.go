package tiers_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/multicall"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tiers"
)

// TestEveryTierListed walks the registry: each tier is a whole entry (its command is
// named as it is, it has defaults and says whether it acts), and every place that lists
// the tiers lists exactly these: the multi-call binary, ctx-replay's in-process tools and
// default pipeline, and ctx-count's tier report, in pipeline order. Adding a tier to the
// registry is enough; a place that lists them by hand fails here.
func TestEveryTierListed(t *testing.T) {
	all := tiers.All()
	if len(all) == 0 {
		t.Fatal("no tiers")
	}
	seen, marks := map[string]bool{}, map[byte]string{'r': "ctx-repair"}
	for _, tier := range all {
		if other, ok := marks[tier.Mark]; ok || tier.Mark == 0 {
			t.Errorf("%s: mark %q is not its own (%s)", tier.Name, tier.Mark, other)
		}
		marks[tier.Mark] = tier.Name
		if seen[tier.Name] {
			t.Errorf("%s listed twice", tier.Name)
		}
		seen[tier.Name] = true
		if tier.Main == nil || tier.Tool == nil || tier.Defaults == nil || tier.Acts == nil {
			t.Fatalf("%s: incomplete entry %+v", tier.Name, tier)
		}
		if got := tier.Tool().Name; got != tier.Name {
			t.Errorf("registry names %s, its command calls itself %s", tier.Name, got)
		}
		if tier.Defaults() == nil {
			t.Errorf("%s: no defaults", tier.Name)
		}
		var out, errs bytes.Buffer
		if code := tier.Main([]string{"--help"}, strings.NewReader(""), &out, &errs, func(string) string { return "" }); code != 0 || !strings.Contains(out.String(), tier.Name) {
			t.Errorf("%s --help: exit %d: %s", tier.Name, code, errs.String())
		}
		if got, ok := tiers.Lookup(tier.Name); !ok || got.Name != tier.Name {
			t.Errorf("Lookup(%s) = %v", tier.Name, ok)
		}
	}
	names := tiers.Names()

	for _, n := range names {
		if !slices.Contains(multicall.Names(), n) {
			t.Errorf("the ctxkit binary has no %s", n)
		}
		if replay.Tools()[n] == nil {
			t.Errorf("ctx-replay cannot run %s in process", n)
		}
	}
	if want := strings.Join(names, " | "); replay.DefaultPipe != want || tiers.Pipe() != want {
		t.Errorf("default pipeline %q (registry %q), want %q", replay.DefaultPipe, tiers.Pipe(), want)
	}

	doc, err := os.ReadFile("../../testdata/anthropic.json")
	if err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := count.Main([]string{"--json", "--window", "200k"}, bytes.NewReader(doc), &out, &errs, func(string) string { return "" }); code != 0 {
		t.Fatalf("ctx-count: exit %d: %s", code, errs.String())
	}
	var rep struct{ Tiers []struct{ Tool string } }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, tr := range rep.Tiers {
		reported = append(reported, tr.Tool)
	}
	if !slices.Equal(reported, names) {
		t.Errorf("ctx-count reports tiers %v, the registry has %v", reported, names)
	}
}
