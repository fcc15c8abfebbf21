#!/usr/bin/env bash
# replay-corpus.sh — what a pipeline would have done to real sessions: ctx-replay on the
# largest Claude Code sessions of ../shared/corpus, each with a window smaller than the one
# it used, so that the tiers have to act. Prints a Markdown table to stdout, one row per
# session and a total; progress goes to stderr.
#
#   scripts/replay-corpus.sh                          the five tiers (ctx-replay's default)
#   scripts/replay-corpus.sh --pipe 'ctx-snip'        any ctx-replay flags are passed on
#
# The sessions are the REPLAY_SESSIONS (8) largest .jsonl files, by size, among those whose
# main line (assistant records not marked isSidechain) records at least 2 usage figures
# (distinct message ids); each is replayed with --window set to REPLAY_SHARE (0.6) times its
# final recorded prompt size: input_tokens + cache_read_input_tokens +
# cache_creation_input_tokens of its last main-line assistant record with usage.
#
# Environment:
#   CTX_CORPUS=DIR        the corpus (default ../shared/corpus beside the repository)
#   REPLAY_SESSIONS=8     how many sessions
#   REPLAY_SHARE=0.6      the window as a share of each session's final prompt
#   REPLAY_JOBS=2         replays run at once
#   REPLAY_JSON=jq|python3   the JSON tool (default jq when installed, else python3)
#   CTX_BIN_DIR=DIR       use the ctx-* binaries in DIR instead of building ./cmd/...
#
# Ratios are the replay's over the session as it was sent: tokens sent, and the prompt's
# cost at the model's cache prices (billed). The total sums the sessions' figures and takes
# the ratios of the sums. Exits 1 if a replay fails (stderr says why; the table holds the
# others), 0 with a message when there is no corpus.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf 'replay-corpus: %s\n' "$*" >&2; }

corpus=${CTX_CORPUS:-$root/../shared/corpus}/claude-code
if [[ ! -d $corpus ]]; then
	log "no Claude Code sessions at $corpus (set CTX_CORPUS): nothing to replay"
	exit 0
fi
corpus=$(cd "$corpus" && pwd)
sessions=${REPLAY_SESSIONS:-8}
share=${REPLAY_SHARE:-0.6}
jobs=${REPLAY_JOBS:-2}

json=${REPLAY_JSON:-}
if [[ -z $json ]]; then
	if command -v jq >/dev/null; then json=jq; elif command -v python3 >/dev/null; then json=python3; fi
fi
case $json in
jq | python3) command -v "$json" >/dev/null || { log "error: $json is not installed"; exit 2; } ;;
'') log "error: neither jq nor python3 is installed"; exit 2 ;;
*) log "error: REPLAY_JSON must be jq or python3, not $json"; exit 2 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Counts of long texts are shared by the replays of one run, never with the user's cache.
export CTX_CACHE_DIR=$work/cache

if [[ -n ${CTX_BIN_DIR:-} ]]; then
	bin=$CTX_BIN_DIR
else
	bin=$work/bin
	log "building ./cmd/... into a temp directory"
	go build -o "$bin/" ./cmd/...
fi
# A --pipe with a program in it runs in a shell, which finds the stages here.
export PATH=$bin:$PATH

# --- choose the sessions ---------------------------------------------------------------------

# Each candidate as "size<TAB>window<TAB>file", the largest first, at most $sessions.
select_jq() {
	local f figures final size
	local -A seen
	local lines=()
	shopt -s globstar nullglob
	for f in "$corpus"/**/*.jsonl; do
		figures=0 final=0
		seen=()
		# fromjson? skips a line that is not JSON, as a torn last line of a live session.
		while IFS=$'\t' read -r id prompt; do
			[[ -n ${seen[$id]:-} ]] || figures=$((figures + 1))
			seen[$id]=1
			final=$prompt
		done < <(jq -R -r 'fromjson? | select(type == "object" and .type == "assistant"
			and (.isSidechain | not) and (.message.usage | type) == "object")
			| [(.message.id // .uuid // "?"),
			   ((.message.usage.input_tokens // 0) + (.message.usage.cache_read_input_tokens // 0)
			    + (.message.usage.cache_creation_input_tokens // 0))] | @tsv' "$f")
		((figures >= 2 && final > 0)) || continue
		size=$(wc -c <"$f")
		lines+=("$size"$'\t'"$final"$'\t'"$f")
	done
	((${#lines[@]})) || return 0
	printf '%s\n' "${lines[@]}" | jq -R -r --argjson n "$sessions" --argjson share "$share" -s '
		split("\n") | map(select(length > 0) | split("\t")
			| {size: (.[0] | tonumber), final: (.[1] | tonumber), file: .[2]})
		| sort_by(-.size, .file) | .[:$n][]
		| "\(.size)\t\(.final * $share | floor)\t\(.file)"'
}

select_python() {
	python3 - "$corpus" "$sessions" "$share" <<'EOF'
import json, os, sys
corpus, n, share = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
found = []
for d, _, names in os.walk(corpus):
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        path = os.path.join(d, name)
        ids, final = set(), 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a torn line
                if not isinstance(r, dict) or r.get("type") != "assistant" or r.get("isSidechain"):
                    continue
                m = r.get("message") or {}
                u = m.get("usage") if isinstance(m, dict) else None
                if not isinstance(u, dict):
                    continue
                ids.add(m.get("id") or r.get("uuid") or "?")
                final = sum(u.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        if len(ids) >= 2 and final > 0:
            found.append((os.path.getsize(path), final, path))
found.sort(key=lambda c: (-c[0], c[2]))
for size, final, path in found[:n]:
    print(f"{size}\t{int(final * share)}\t{path}")
EOF
}

chosen=$work/sessions.tsv
"select_$([[ $json == jq ]] && echo jq || echo python)" >"$chosen"
if [[ ! -s $chosen ]]; then
	log "no session under $corpus records 2 usage figures: nothing to replay"
	exit 0
fi

# --- replay them, $jobs at a time --------------------------------------------------------------

mkdir -p "$work/out"
i=0 running=0
while IFS=$'\t' read -r size window file; do
	i=$((i + 1))
	out=$work/out/$(printf '%02d' "$i")
	printf '%s\t%s\t%s\n' "$size" "$window" "$file" >"$out.meta"
	log "replaying $(basename "$file") ($size bytes) at a window of $window tokens"
	(
		if "$bin/ctx-replay" --json --window "$window" "$@" "$file" >"$out.json" 2>"$out.err"; then
			: >"$out.ok"
		fi
	) &
	running=$((running + 1))
	if ((running >= jobs)); then
		wait -n || true
		running=$((running - 1))
	fi
done <"$chosen"
wait

# --- the table ---------------------------------------------------------------------------------

failed=0
for meta in "$work"/out/*.meta; do
	base=${meta%.meta}
	if [[ ! -e $base.ok ]]; then
		failed=$((failed + 1))
		IFS=$'\t' read -r _ _ file <"$meta"
		log "error: $(basename "$file"): $(tail -n 1 "$base.err")"
		rm -f "$base.json"
	fi
done

table_jq() {
	jq -r -n '
		def f2: (. * 100 | round) as $c | "\($c / 100 | floor).\($c % 100 | tostring | if length < 2 then "0" + . else . end)";
		def ratio(a; b): if b > 0 then (a / b | f2) else "-" end;
		def fired: to_entries | map("\(.key | ltrimstr("ctx-")) \(.value)") | join(", ") | if . == "" then "none" else . end;
		def kb: if . >= 1048576 then "\(. / 1048576 * 10 | round / 10) MB" else "\(. / 1024 | round) KB" end;
		def row(name; size; window):
			"| \(name) | \(size) | \(window) | \(.requests) | \(.over_window) | \(.over_window_unavoidable) | \(.over_window_uncompacted) | \(.cache_breaks) | \(.oracle.fewest_cache_breaks) | \(.repeat_firings) | \(.repeat_firings_needed) | \(ratio(.tokens_sent; .tokens_uncompacted)) | \(ratio(.cost; .cost_uncompacted)) | \(ratio(.oracle.cost; .cost_uncompacted)) | \(.firings | fired) |";
		[inputs] as $all
		| ($all | map(select(has("requests")))) as $r
		| ($all | map(select(has("meta")) | .meta)) as $m
		| "| session | size | window | requests | over window | of which unavoidable | over window as recorded | cache breaks | fewest possible | repeat firings | of which needed | tokens sent | billed | best possible | firings |",
		  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
		  (range($r | length) as $i | $r[$i] | row(.file | split("/") | last | .[0:8]; $m[$i].size | kb; $m[$i].window)),
		  ($r | {requests: (map(.requests) | add), over_window: (map(.over_window) | add),
		         over_window_unavoidable: (map(.over_window_unavoidable) | add),
		         over_window_uncompacted: (map(.over_window_uncompacted) | add),
		         cache_breaks: (map(.cache_breaks) | add), repeat_firings: (map(.repeat_firings) | add),
		         repeat_firings_needed: (map(.repeat_firings_needed) | add),
		         oracle: {fewest_cache_breaks: (map(.oracle.fewest_cache_breaks) | add), cost: (map(.oracle.cost) | add)},
		         tokens_sent: (map(.tokens_sent) | add), tokens_uncompacted: (map(.tokens_uncompacted) | add),
		         cost: (map(.cost) | add), cost_uncompacted: (map(.cost_uncompacted) | add),
		         firings: (map(.firings | to_entries[]) | group_by(.key) | map({key: .[0].key, value: (map(.value) | add)}) | from_entries)}
		   | row("**total**"; ""; ""))' "$@"
}

table_python() {
	python3 - "$@" <<'EOF'
import json, sys
args = sys.argv[1:]
rows = []
for k in range(0, len(args), 2):
    meta, report = json.load(open(args[k])), json.load(open(args[k + 1]))
    rows.append((meta["meta"], report))

def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "-"

def fired(f):
    return ", ".join(f"{k.removeprefix('ctx-')} {v}" for k, v in sorted(f.items())) or "none"

def kb(n):
    return f"{round(n / 1048576, 1)} MB" if n >= 1048576 else f"{round(n / 1024)} KB"

def row(name, size, window, r):
    return (f"| {name} | {size} | {window} | {r['requests']} | {r['over_window']} | {r['over_window_unavoidable']} | {r['over_window_uncompacted']} "
            f"| {r['cache_breaks']} | {r['oracle']['fewest_cache_breaks']} | {r['repeat_firings']} | {r['repeat_firings_needed']} "
            f"| {ratio(r['tokens_sent'], r['tokens_uncompacted'])} | {ratio(r['cost'], r['cost_uncompacted'])} "
            f"| {ratio(r['oracle']['cost'], r['cost_uncompacted'])} | {fired(r['firings'])} |")

print("| session | size | window | requests | over window | of which unavoidable | over window as recorded | cache breaks | fewest possible | repeat firings | of which needed | tokens sent | billed | best possible | firings |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
total = {k: 0 for k in ("requests", "over_window", "over_window_unavoidable", "over_window_uncompacted", "cache_breaks", "repeat_firings",
                        "repeat_firings_needed", "tokens_sent", "tokens_uncompacted", "cost", "cost_uncompacted")}
total["firings"] = {}
total["oracle"] = {"fewest_cache_breaks": 0, "cost": 0}
for meta, r in rows:
    print(row(r["file"].split("/")[-1][:8], kb(meta["size"]), meta["window"], r))
    for k in total:
        if k == "firings":
            for tool, n in r["firings"].items():
                total["firings"][tool] = total["firings"].get(tool, 0) + n
        elif k == "oracle":
            for o in total["oracle"]:
                total["oracle"][o] += r["oracle"][o]
        else:
            total[k] += r[k]
print(row("**total**", "", "", total))
EOF
}

# Each replayed session as two JSON documents: {"meta":{size, window}}, then its report.
args=()
for meta in "$work"/out/*.meta; do
	base=${meta%.meta}
	[[ -e $base.ok ]] || continue
	IFS=$'\t' read -r size window _ <"$meta"
	printf '{"meta":{"size":%s,"window":%s}}\n' "$size" "$window" >"$base.m.json"
	args+=("$base.m.json" "$base.json")
done
if ((${#args[@]})); then
	"table_$([[ $json == jq ]] && echo jq || echo python)" "${args[@]}"
fi
log "$((i - failed)) of $i sessions replayed with ctx-replay${*:+ $*} (window = $share × the final prompt; JSON by $json)"
((failed == 0)) || exit 1
