package replay

import "github.com/ctxkit/ctxkit/internal/tokens"

// The floor of a replay: what the best schedule of compactions could have achieved on the
// session, against which the tiers are judged. The oracle knows the whole session. At any
// request it may compact the history to the request's floor (Turn.Floor: the part the file
// does not hold, the tool schemas and the messages no tier may change), which costs a cache
// break when the cache is warm: only the part before the messages is read, the rest is
// written. Between compactions a request is the one before plus what the session added.
// Every request must fit the window unless its floor is already over it: then nothing
// makes it fit, and it may be left at any size (the tiers leave such a request as it is
// unless the change pays for itself).
//
// No tier can do better under the replay's cache model: a compaction to any size above the
// floor writes at least what one to the floor writes (the newest messages are new in both)
// and leaves more to read on every later request. So the oracle's cost is a floor for the
// cost, and its fewest breaks a floor for the breaks, of any pipeline of ctxkit's tiers.

// oracleStep is what the oracle knows of one request.
type oracleStep struct {
	uncompacted int  // the request as the session sent it
	floor       int  // the least it could be made
	base        int  // the part of the floor before the messages: read from a warm cache even after a break
	warm        bool // the cache still holds the request before (false for the first)
	// restart: the client compacted its history before this request, which is that
	// history (uncompacted) whatever came before: the cache breaks there for any schedule,
	// and not by the schedule's doing.
	restart bool
	// recorded: the session records the request's cache split, by which the replay
	// prices it (Turn); the oracle's reads are then moved as the replay moves a changed
	// request's, by adjust (what the session read less what the model says it read), and
	// the rest split between fresh input and cache writes as the session's was.
	recorded       bool
	adjust         int
	fresh, written int
}

// cost is what request i costs at size tokens, cached of them read from the cache by the
// model: priced as the replay prices a request sent (Turn.Cost).
func (s oracleStep) cost(price tokens.Price, size, cached int) float64 {
	if !s.recorded {
		return price.Cost(size, cached)
	}
	return billedAs(price, size, min(max(0, cached+s.adjust), size), s.fresh, s.written)
}

// Floor is the best a replay could have done.
type Floor struct {
	// Cost is the least any schedule of compactions pays for the prompts, every request
	// within the window; CacheBreaks how many breaks that schedule makes.
	Cost        float64 `json:"cost"`
	CacheBreaks int     `json:"cache_breaks"`
	// FewestBreaks is the least number of cache breaks with which every request fits.
	FewestBreaks int `json:"fewest_cache_breaks"`
	// BilledRatio is Cost over the cost of the session as it was sent.
	BilledRatio float64 `json:"billed_ratio"`
}

// oracleCost is a schedule's value: breaks and cost, compared by one or the other first.
type oracleCost struct {
	breaks int
	cost   float64
}

func (a oracleCost) add(b oracleCost) oracleCost {
	return oracleCost{a.breaks + b.breaks, a.cost + b.cost}
}

// floorOf finds the cheapest schedule and the one with the fewest breaks (the cheaper
// among those), by dynamic programming over where the last compaction was: O(n²) in the
// requests.
func floorOf(steps []oracleStep, effective int, price tokens.Price) Floor {
	cheapest := schedule(steps, effective, price, func(a, b oracleCost) bool {
		return a.cost < b.cost || a.cost == b.cost && a.breaks < b.breaks
	})
	fewest := schedule(steps, effective, price, func(a, b oracleCost) bool {
		return a.breaks < b.breaks || a.breaks == b.breaks && a.cost < b.cost
	})
	return Floor{Cost: cheapest.cost, CacheBreaks: cheapest.breaks, FewestBreaks: fewest.breaks}
}

// schedule is the best value, by less, of a schedule of compactions over steps.
func schedule(steps []oracleStep, effective int, price tokens.Price, less func(a, b oracleCost) bool) oracleCost {
	n := len(steps)
	if n == 0 {
		return oracleCost{}
	}
	fits := func(i, size int) bool {
		return effective <= 0 || size <= effective || steps[i].floor > effective
	}
	// request i, continued from a request of size prev: it grows by what the session added
	request := func(i, prev, size int) oracleCost {
		s := steps[i]
		switch {
		case !s.warm:
			return oracleCost{cost: s.cost(price, size, 0)}
		case s.restart:
			return oracleCost{cost: s.cost(price, size, min(s.base, size))}
		}
		return oracleCost{cost: s.cost(price, size, min(prev, size))}
	}
	compact := func(i int) oracleCost {
		s := steps[i]
		switch {
		case !s.warm:
			return oracleCost{cost: s.cost(price, s.floor, 0)}
		case s.restart:
			return oracleCost{cost: s.cost(price, s.floor, min(s.base, s.floor))}
		}
		return oracleCost{breaks: 1, cost: s.cost(price, s.floor, min(s.base, s.floor))}
	}
	// run extends a schedule whose last compaction is at start (size there: size) as far
	// as it fits, calling at(k, value) with the value of requests start+1..k-1 for every
	// k that could compact next, and end with the value through the last request.
	run := func(start, size int, at func(k int, v oracleCost), end func(v oracleCost)) {
		var v oracleCost
		for k := start + 1; k < n; k++ {
			at(k, v)
			next := max(steps[k].floor, size+steps[k].uncompacted-steps[k-1].uncompacted)
			if steps[k].restart {
				next = max(steps[k].floor, steps[k].uncompacted)
			}
			if !fits(k, next) {
				return
			}
			v = v.add(request(k, size, next))
			size = next
		}
		end(v)
	}

	// best[k]: the best value through request k, with a compaction at k.
	best := make([]oracleCost, n)
	set := make([]bool, n)
	var total oracleCost
	done := false
	offer := func(v oracleCost) {
		if !done || less(v, total) {
			total, done = v, true
		}
	}
	relax := func(k int, v oracleCost) {
		v = v.add(compact(k))
		if !set[k] || less(v, best[k]) {
			best[k], set[k] = v, true
		}
	}
	// No compaction before request 0's own: the session as sent, or compacted at once.
	relax(0, oracleCost{})
	if fits(0, steps[0].uncompacted) {
		first := request(0, 0, steps[0].uncompacted)
		run(0, steps[0].uncompacted, func(k int, v oracleCost) { relax(k, first.add(v)) }, func(v oracleCost) { offer(first.add(v)) })
	}
	for j := 0; j < n; j++ {
		if !set[j] {
			continue
		}
		base := best[j]
		run(j, steps[j].floor, func(k int, v oracleCost) { relax(k, base.add(v)) }, func(v oracleCost) { offer(base.add(v)) })
	}
	return total
}
