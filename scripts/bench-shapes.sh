#!/usr/bin/env bash
# bench-shapes.sh — exact counting throughput by shape of text, before and after a change.
#
# Builds the test binary of internal/tokens at two revisions (BASE, default main, and the
# working tree), runs BenchmarkMixed and BenchmarkPathological (cjk, base64, digits,
# spaces, letters at 10 KB, 100 KB, 1 MB and 5 MB) of each on one core, alternating the
# two binaries round after round so both see the same machine, and prints a Markdown
# table of the best cpu-MB/s (throughput by CPU time) of each, with the ratio. Progress
# goes to stderr.
#
#   scripts/bench-shapes.sh                   main against the working tree, best of 3
#   BASE=HEAD~2 ROUNDS=5 scripts/bench-shapes.sh
#
# Environment:
#   BASE=main          the revision to compare with (any git revision; exported with
#                      git archive, so no worktree is made)
#   ROUNDS=3           rounds; each runs both binaries once
#   BENCH='Pathological|Mixed'   benchmarks to run (a -test.bench pattern)
#   BENCHTIME=1s       -test.benchtime of each run (Mixed takes 5 s an iteration of its
#                      tiktoken-go rows whatever this says)
#
# On a machine shared with other work the wall clock says little; cpu-MB/s is steadier,
# and the best of several rounds steadier still.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

base=${BASE:-main}
rounds=${ROUNDS:-3}
bench=${BENCH:-Pathological|Mixed}
benchtime=${BENCHTIME:-1s}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building $base and the working tree" >&2
mkdir "$work/base"
git archive "$base" | tar -x -C "$work/base"
# Both are measured by the working tree's benchmarks when they build against BASE, so a
# change to the harness does not pass for a change of speed.
cp internal/tokens/bench_test.go "$work/base/internal/tokens/bench_test.go"
if ! (cd "$work/base" && go test -c -o "$work/base.test" ./internal/tokens/ 2>/dev/null); then
	echo "the working tree's bench_test.go does not build against $base; using its own" >&2
	git show "$base:internal/tokens/bench_test.go" >"$work/base/internal/tokens/bench_test.go"
	(cd "$work/base" && go test -c -o "$work/base.test" ./internal/tokens/)
fi
go test -c -o "$work/new.test" ./internal/tokens/

for round in $(seq "$rounds"); do
	for which in base new; do
		echo "round $round: $which" >&2
		(cd internal/tokens && "$work/$which.test" -test.run '^$' -test.bench "$bench" \
			-test.benchtime "$benchtime" -test.cpu 1) |
			awk -v which="$which" '/^Benchmark/ {
				for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-MB/s") print which, $1, $i
			}' >>"$work/results"
	done
done

awk '
	{ v = $3 + 0; k = $2; if (!(k in seen)) { seen[k] = 1; order[n++] = k }
	  if (v > best[$1, k]) best[$1, k] = v }
	END {
		print "| benchmark | base cpu-MB/s | new cpu-MB/s | new/base |"
		print "|---|---:|---:|---:|"
		for (i = 0; i < n; i++) {
			k = order[i]; b = best["base", k]; c = best["new", k]
			name = k; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
			printf "| %s | %.1f | %.1f | %s |\n", name, b, c, (b > 0 ? sprintf("%.2f", c / b) : "-")
		}
	}' "$work/results"
