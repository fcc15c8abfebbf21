package transcript

// RecordUsage reads the usage figure one record of a Claude Code or Codex transcript
// carries (raw is the record's line), whether or not the record is part of the live
// conversation: a figure from before a compaction, which Parse and Stream leave out as
// it measures a context that is gone, is still the session's history (ctx-count's trend).
// turn names the request the figure is of: for Claude Code its turn, which a turn written
// over several lines repeats, the last line's being the final one; for Codex the session's
// running totals the event carries ("" when it carries none), which an event repeating
// the request's figure repeats too (codexTokenCount). Subagents' (isSidechain) figures measure another context and
// are not read. After is not set.
func RecordUsage(f Format, raw string) (u Usage, turn string, ok bool) {
	return ThreadUsage(f, raw, false)
}

// ThreadUsage is RecordUsage for the figures of one thread of a Claude Code log: the
// session's, or with sidechain a subagent's (its own log's, whose lines are all
// isSidechain).
func ThreadUsage(f Format, raw string, sidechain bool) (u Usage, turn string, ok bool) {
	switch f {
	case ClaudeCode:
		var rf [3]jval
		recordValue(raw, 0).fields(rf[:], "type", "isSidechain", "message")
		if rf[0].str() != "assistant" || rf[1].boolean() != sidechain || !rf[2].isObject() {
			return Usage{}, "", false
		}
		var mf [2]jval
		rf[2].fields(mf[:], "id", "usage")
		u, ok = ccUsage(mf[1])
		return u, mf[0].str(), ok
	case Codex:
		var rf [2]jval
		recordValue(raw, 0).fields(rf[:], "type", "payload")
		if rf[0].str() != "event_msg" {
			return Usage{}, "", false
		}
		var pf [2]jval
		rf[1].fields(pf[:], "type", "info")
		if pf[0].str() != "token_count" {
			return Usage{}, "", false
		}
		u, totals, hasTotals, ok := codexTokenCount(pf[1])
		if hasTotals {
			turn = "codex " + totals.key()
		}
		return u, turn, ok
	}
	return Usage{}, "", false
}
