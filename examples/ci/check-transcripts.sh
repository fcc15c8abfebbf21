#!/bin/sh
# Fail a pull request whose agent transcript is over 85% of its model's context window.
#
#   check-transcripts.sh FILE...
#
# FILE is a transcript the pull request adds (a Claude Code or Codex session log, an API
# request): see context-check.yml for the step that finds them. The window is the one the
# transcript records its model for, or CTX_MODEL / CTX_WINDOW; FAIL_OVER changes 85%.
# Exit 0: every transcript fits; 1: one is over; 2 and above: ctx-count could not run.
set -u
if [ $# -eq 0 ]; then
	echo "no agent transcripts in this change"
	exit 0
fi
report=${REPORT:-ctx-count.jsonl}
# One JSON line per transcript (kept as the step's artifact); exit 1 when one is over.
ctx-count --fail-over "${FAIL_OVER:-85%}" "$@" > "$report"
status=$?
if [ "$status" -eq 1 ]; then
	# A GitHub annotation on the pull request; other CI systems show it as a log line.
	echo "::error::an agent transcript is over ${FAIL_OVER:-85%} of its context window (see $report); compact it: ctx-persist | ctx-budget | ctx-snip | ctx-summarize | ctx-trim"
fi
exit "$status"
