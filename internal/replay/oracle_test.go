package replay

import (
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
)

// TestFloorOf checks the oracle on sessions small enough to price by hand. Prices are
// relative, a million tokens at a time: written 1.25, read 0.1.
func TestFloorOf(t *testing.T) {
	price := tokens.Price{Model: "relative", Input: 1e6, CacheWrite: 1.25e6, CacheRead: 0.1e6}
	// Three requests growing by 10 from 50; each could be made 20, of which 10 come
	// before the messages.
	grow := []oracleStep{
		{uncompacted: 50, floor: 20, base: 10},
		{uncompacted: 60, floor: 20, base: 10, warm: true},
		{uncompacted: 70, floor: 20, base: 10, warm: true},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, c := range []struct {
		name         string
		steps        []oracleStep
		effective    int
		cost         float64
		breaks       int
		fewestBreaks int
	}{
		// No window: compacting the cold first request is free; then every request is
		// cheapest at its floor (read 10, write 10: 13.5) rather than grown (14.5, 15.5).
		{"no window", grow, 0, 25 + 13.5 + 13.5, 2, 0},
		// A window of 35: grown from the first compaction, the third request (40) is over,
		// so one break at least.
		{"tight window", grow, 35, 25 + 13.5 + 13.5, 2, 1},
		// The cache expires before every request: each is written whole, and compacting
		// is never a break.
		{"cold", []oracleStep{grow[0], {uncompacted: 60, floor: 20, base: 10}, {uncompacted: 70, floor: 20, base: 10}}, 35, 3 * 25, 0, 0},
		// A floor over the window: the request is let through at its floor (60), which the
		// first compaction grown by 30 (50) falls short of, without a break.
		{"unavoidable", []oracleStep{grow[0], {uncompacted: 80, floor: 60, base: 10, warm: true}}, 35, 25 + (20*0.1 + 40*1.25), 0, 0},
		{"empty", nil, 35, 0, 0, 0},
	} {
		f := floorOf(c.steps, c.effective, price)
		if !near(f.Cost, c.cost) || f.CacheBreaks != c.breaks || f.FewestBreaks != c.fewestBreaks {
			t.Errorf("%s: cost %.2f, %d breaks, fewest %d; want %.2f, %d, %d", c.name, f.Cost, f.CacheBreaks, f.FewestBreaks, c.cost, c.breaks, c.fewestBreaks)
		}
	}
}

// TestFloorOfMatchesSearch compares the dynamic programme with every schedule of
// compactions on small made-up sessions.
func TestFloorOfMatchesSearch(t *testing.T) {
	price := tokens.PriceOf("", "anthropic")
	seed := uint32(7)
	next := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	for round := 0; round < 200; round++ {
		n := 1 + next(7)
		steps := make([]oracleStep, n)
		size := 0
		for i := range steps {
			size += 5 + next(40)
			floor := 5 + next(30)
			steps[i] = oracleStep{uncompacted: size, floor: min(floor, size), base: min(5+next(5), floor, size), warm: i > 0 && next(5) > 0}
		}
		effective := 30 + next(80)
		got := floorOf(steps, effective, price)
		cheapest, fewest := math.Inf(1), math.MaxInt
		for mask := 0; mask < 1<<n; mask++ {
			cost, breaks, ok := priceSchedule(steps, mask, effective, price)
			if !ok {
				continue
			}
			cheapest = min(cheapest, cost)
			fewest = min(fewest, breaks)
		}
		if math.Abs(got.Cost-cheapest) > 1e-12 || got.FewestBreaks != fewest {
			t.Fatalf("round %d %+v window %d: cost %g, fewest %d; search: %g, %d", round, steps, effective, got.Cost, got.FewestBreaks, cheapest, fewest)
		}
	}
}

// priceSchedule prices the schedule that compacts at the requests mask marks, the way the
// oracle's rules say, or reports that it puts a request over the window it could fit.
func priceSchedule(steps []oracleStep, mask, effective int, price tokens.Price) (cost float64, breaks int, ok bool) {
	size := 0
	for i, s := range steps {
		prev := size
		if mask&(1<<i) != 0 {
			size = s.floor
			if s.warm {
				breaks++
				cost += price.Cost(size, min(s.base, size))
			} else {
				cost += price.Cost(size, 0)
			}
		} else {
			if i == 0 {
				size = s.uncompacted
			} else {
				size = max(s.floor, size+s.uncompacted-steps[i-1].uncompacted)
			}
			if s.warm {
				cost += price.Cost(size, min(prev, size))
			} else {
				cost += price.Cost(size, 0)
			}
		}
		if size > max(effective, s.floor) {
			return 0, 0, false
		}
	}
	return cost, breaks, true
}
