#!/usr/bin/env bash
# differential.sh — run the ctx-* tools of two revisions over the same inputs with the same
# flags and compare everything they print and write (issue 14: "behaviour unchanged").
#
#   scripts/differential.sh [BASE_REV [NEW_REV]]
#
# BASE_REV defaults to the merge-base of `main` and HEAD: on a branch, the point where it
# left main; on main itself that is HEAD, so the run compares the last commit with the
# uncommitted changes. NEW_REV defaults to the working tree as it is, uncommitted changes
# included. A revision is exported with `git archive` into a temp dir and built there
# (no worktree is added to the repository); the working tree is built in place. Both are
# built with -trimpath, so a panic's stack trace names the same files on both sides.
#
# Inputs: every transcript under ../shared/corpus (all files but *.meta.json, *.md and
# LICENSE; the folder may be absent) and testdata/*.json, testdata/*.jsonl. Each input
# goes through a matrix of invocations (see add_cases below): every filter's default run
# with --stats, runs that make the tiers act on small documents, the dry-run and check
# modes, the file as an argument (streamed for JSONL) and the same file on stdin
# (spooled), -o OUT, a ctx-persist → --restore round trip, and --sidechains on files that
# have subagent lines.
#
# Every invocation runs under `env -i` with PATH=<that side's binaries>:/usr/bin:/bin,
# HOME and CTX_STORE inside a fresh run folder, CTX_CACHE_DIR=off and a fixed CTX_NOW
# (ctx-snip's clock for its idle rule; ctx-snip reads it through kong's env tag of --now).
# The two sides of one case run one after the other in the same run folder path, emptied
# in between, so the paths a tool prints (the store named in persist's references, -o
# targets) are the same bytes on both sides and need no rewriting. Compared, per step:
# exit status, stdout bytes, the --stats line, the rest of stderr, and every file left in
# the run folder (-o OUT, the offload store, anything else). The only normalisation is the
# "time" member of the store's index.jsonl: it is the wall clock at the moment of the run
# (store.Entry.Time, not taken from CTX_NOW), so it legitimately differs between sides;
# and so ctx-recall's segments (store/recall/seg-*.rix) made from it: their hash of the
# index is blanked and their random names replaced by one made from the rest.
#
# Prints a summary and exits 0 when every case is identical, 1 when any differs (2 for a
# usage or build error). Differing cases are kept, with both sides' outputs and a
# report.txt, in a folder the summary names.
#
# Environment:
#   DIFF_JOBS=$(nproc)    cases run in parallel
#   DIFF_CORPUS=DIR       corpus folder (default ../shared/corpus; "none" for testdata only)
#   DIFF_TOOLS="..."      only these tools (e.g. "ctx-snip ctx-trim"); default all eight
#   DIFF_TIMEOUT=120      seconds one invocation may take before it is killed (exit 124)
#   DIFF_KEEP=DIR         where to keep differing cases, an empty or new folder (default a
#                         new mktemp -d folder); removed again when nothing differs
#   DIFF_KEEP_MAX=200     keep full outputs of at most this many cases (reports of all)
#   DIFF_SHOW=20          differing cases shown with their diff in the summary
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
case ${1:-} in -h | --help) usage; exit 0 ;; esac
if (($# > 2)); then
	usage >&2
	exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf 'differential: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# --- revisions -----------------------------------------------------------------------------

if (($# >= 1)); then
	base_spec=$1
elif git rev-parse -q --verify 'main^{commit}' >/dev/null; then
	base_spec="merge-base of main and HEAD"
	base_rev=$(git merge-base main HEAD) || die "main and HEAD have no merge-base"
else
	base_spec=HEAD
fi
if [[ -z ${base_rev:-} ]]; then
	base_rev=$(git rev-parse -q --verify "$base_spec^{commit}") || die "not a revision: $base_spec"
fi
new_rev=""
if (($# == 2)); then
	new_rev=$(git rev-parse -q --verify "$2^{commit}") || die "not a revision: $2"
fi

jobs=${DIFF_JOBS:-$(nproc)}
timeout_s=${DIFF_TIMEOUT:-120}
keep_max=${DIFF_KEEP_MAX:-200}
show=${DIFF_SHOW:-20}
now=2026-01-01T00:00:00Z
all_tools="ctx-budget ctx-convert ctx-count ctx-persist ctx-repair ctx-snip ctx-summarize ctx-trim"
tools=${DIFF_TOOLS:-$all_tools}
for t in $tools; do
	[[ " $all_tools " == *" $t "* ]] || die "DIFF_TOOLS: unknown tool $t"
done
corpus=${DIFF_CORPUS:-$root/../shared/corpus}

if [[ -n ${DIFF_KEEP:-} ]]; then
	mkdir -p "$DIFF_KEEP"
	[[ -z $(ls -A "$DIFF_KEEP") ]] || die "DIFF_KEEP=$DIFF_KEEP is not empty"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ctxkit-diff-work.XXXXXX")
keep=""
progress_pid=""
xargs_pid=""
cleanup() {
	if [[ -n $progress_pid ]]; then kill "$progress_pid" 2>/dev/null || true; fi
	if [[ -n $xargs_pid ]]; then # interrupted: the workers stop after the case they are on
		: >"$work/stop"
		log "interrupted: waiting for the running cases to end"
		wait "$xargs_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
	if [[ -n $keep ]]; then rmdir "$keep" 2>/dev/null || true; fi # only when nothing was kept
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -n ${DIFF_KEEP:-} ]]; then
	keep=$(cd "$DIFF_KEEP" && pwd)
else
	keep=$(mktemp -d "${TMPDIR:-/tmp}/ctxkit-differential.XXXXXX")
fi

# --- building ------------------------------------------------------------------------------

# build SIDE REV: REV's binaries into $work/bin-SIDE; REV empty builds the working tree.
build() {
	local side=$1 rev=$2 src
	mkdir -p "$work/bin-$side"
	if [[ -z $rev ]]; then
		src=$root
	else
		src=$work/src-$side
		mkdir -p "$src"
		git archive --format=tar "$rev" | tar -x -C "$src"
	fi
	if ! (cd "$src" && go build -trimpath -buildvcs=false -o "$work/bin-$side/" ./cmd/...) 2>"$work/build-$side.err"; then
		cat "$work/build-$side.err" >&2
		die "building the $side side (${rev:-working tree}) failed"
	fi
}

base_label="$base_spec ($(git rev-parse --short "$base_rev"))"
if [[ -n $new_rev ]]; then
	new_label="$2 ($(git rev-parse --short "$new_rev"))"
else
	dirty=$(git status --porcelain --untracked-files=no | wc -l)
	new_label="working tree (HEAD $(git rev-parse --short HEAD), $dirty changed tracked files)"
fi
log "base: $base_label"
log "new:  $new_label"
t_start=$SECONDS
build base "$base_rev"
build new "$new_rev"
log "built both sides in $((SECONDS - t_start)) s"

# --- inputs and cases ----------------------------------------------------------------------

inputs=()
for f in testdata/*.json testdata/*.jsonl; do
	[[ -f $f ]] && inputs+=("$root/$f")
done
if [[ $corpus != none && -d $corpus ]]; then
	corpus=$(cd "$corpus" && pwd)
	mapfile -d '' corpus_files < <(find "$corpus" -type f ! -name '*.meta.json' ! -name '*.md' ! -name 'LICENSE*' -print0 | sort -z)
	inputs+=("${corpus_files[@]}")
	log "corpus: ${#corpus_files[@]} files in $corpus"
else
	log "no corpus (${corpus}): testdata only"
fi
((${#inputs[@]} > 0)) || die "no inputs"

cases=$work/cases.tsv
: >"$cases"
n_cases=0
# add KIND TOOL INPUT ARG...: one case, a line of tab-separated id, kind, input, tool, args.
# KIND is arg (the file as an argument), stdin (< file), out (-o OUT file), stdin-out
# (-o OUT < file) or roundtrip (ctx-persist ARGS -o OUT file, then --restore OUT, then
# --restore < OUT).
add() {
	local kind=$1 tool=$2 input=$3 a
	shift 3
	[[ " $tools " == *" $tool "* ]] || return 0
	for a in "$@"; do
		[[ $a != *[[:space:]]* ]] || die "an argument with white space: '$a'"
	done
	n_cases=$((n_cases + 1))
	printf '%d\t%s\t%s\t%s\t%s\n' "$n_cases" "$kind" "$input" "$tool" "$*" >>"$cases"
}

# add_cases INPUT: the matrix for one input. Flags are the ones each tool's --help lists.
add_cases() {
	local f=$1 k
	# ctx-count: the JSON report.
	add arg ctx-count "$f" --json
	add stdin ctx-count "$f" --json
	add arg ctx-count "$f" --json --window=8k
	add arg ctx-count "$f" -p --stats
	# ctx-convert: to each target.
	for k in anthropic openai responses; do
		add arg ctx-convert "$f" --to="$k" --stats
	done
	add stdin ctx-convert "$f" --to=openai --stats
	add out ctx-convert "$f" --to=anthropic --stats
	# ctx-repair
	add arg ctx-repair "$f" --stats
	add stdin ctx-repair "$f" --stats
	add arg ctx-repair "$f" --check
	add stdin ctx-repair "$f" --check
	add out ctx-repair "$f" --stats
	# ctx-budget
	add arg ctx-budget "$f" --stats
	add stdin ctx-budget "$f" --stats
	add arg ctx-budget "$f" --cap=2000 --stats
	add stdin ctx-budget "$f" --cap=2000 --stats
	add arg ctx-budget "$f" --window=8k --stats
	add arg ctx-budget "$f" --cap=300tok --keep-recent=1 --stats
	add out ctx-budget "$f" --cap=2000 --stats
	# ctx-snip: with CTX_NOW fixed, a timestamped transcript older than --idle is cold.
	add arg ctx-snip "$f" --stats
	add stdin ctx-snip "$f" --stats
	add arg ctx-snip "$f" --trigger=1% --stats
	add stdin ctx-snip "$f" --trigger=1% --stats
	add arg ctx-snip "$f" --idle=0 --trigger=1% --stats
	add arg ctx-snip "$f" --window=8k --clear-inputs --stats
	add arg ctx-snip "$f" -n --trigger=1% --stats
	add stdin-out ctx-snip "$f" --trigger=1% --stats
	# ctx-trim
	add arg ctx-trim "$f" --stats
	add stdin ctx-trim "$f" --stats
	add arg ctx-trim "$f" --trigger=5% --stats
	add stdin ctx-trim "$f" --trigger=5% --stats
	add arg ctx-trim "$f" -n --trigger=5% --stats
	add arg ctx-trim "$f" --strategy=first --trigger=5% --stats
	add arg ctx-trim "$f" --max-tokens=2000 --stats
	add arg ctx-trim "$f" --window=8k --stats
	add out ctx-trim "$f" --trigger=5% --stats
	# ctx-summarize (the local backend: offline and deterministic)
	add arg ctx-summarize "$f" --stats
	add stdin ctx-summarize "$f" --stats
	add arg ctx-summarize "$f" --force --stats
	add arg ctx-summarize "$f" --force --keep=2turns --stats
	add stdin ctx-summarize "$f" --force --keep=2turns --stats
	add arg ctx-summarize "$f" --window=20k --stats
	add out ctx-summarize "$f" --force --keep=2turns --offload --stats
	# ctx-persist
	add arg ctx-persist "$f" --stats
	add stdin ctx-persist "$f" --stats
	add arg ctx-persist "$f" --threshold=2KB --stats
	add stdin ctx-persist "$f" --threshold=2KB --stats
	add arg ctx-persist "$f" --threshold=2KB --preview=0 --stats
	add roundtrip ctx-persist "$f" --threshold=2KB --stats
	# Claude Code subagent lines
	if grep -q '"isSidechain"' "$f"; then
		add arg ctx-count "$f" --json --sidechains
		add arg ctx-convert "$f" --sidechains --stats
		add arg ctx-repair "$f" --sidechains --check
		add arg ctx-budget "$f" --sidechains --cap=2000 --stats
		add arg ctx-snip "$f" --sidechains --trigger=1% --stats
		add stdin ctx-snip "$f" --sidechains --trigger=1% --stats
		add arg ctx-trim "$f" --sidechains --trigger=5% --stats
		add arg ctx-summarize "$f" --sidechains --force --keep=2turns --stats
		add arg ctx-persist "$f" --sidechains --threshold=2KB --stats
	fi
}
for f in "${inputs[@]}"; do
	add_cases "$f"
done
((n_cases > 0)) || die "no cases (DIFF_TOOLS=$tools)"

# --- running one case ----------------------------------------------------------------------
# These functions run in the bash processes xargs starts (exported below). They are written
# to start few processes: a case costs about as much in forks as in the tools themselves.

# run_side SIDE: one side of the current case; outputs in $d/SIDE (stdout.N, stderr.N,
# rc.N for step N, files/ = what was left in the run folder).
run_side() {
	local side=$1 R=$d/run S=$d/$1 ext=${input##*.}
	local -a ex=(timeout -k 5 "$DIFF_TIMEOUT_S" env -i "PATH=$WORK/bin-$side:/usr/bin:/bin"
		"HOME=$R/home" CTX_CACHE_DIR=off "CTX_NOW=$DIFF_NOW" "CTX_STORE=$R/store")
	mkdir -p "$R/home" "$S"
	cd "$R"
	case $kind in
	arg) step 1 /dev/null "$tool" "${argv[@]}" "$input" ;;
	stdin) step 1 "$input" "$tool" "${argv[@]}" ;;
	out) step 1 /dev/null "$tool" "${argv[@]}" -o "$R/out.$ext" "$input" ;;
	stdin-out) step 1 "$input" "$tool" "${argv[@]}" -o "$R/out.$ext" ;;
	roundtrip)
		step 1 /dev/null "$tool" "${argv[@]}" -o "$R/persisted.$ext" "$input"
		step 2 /dev/null "$tool" --restore --stats "$R/persisted.$ext"
		if [[ -f $R/persisted.$ext ]]; then
			step 3 "$R/persisted.$ext" "$tool" --restore --stats
		fi
		;;
	*) echo "unknown kind $kind" >&2; return 1 ;;
	esac
	cd "$d"
	# The store's index records the wall clock of the run (not CTX_NOW).
	if [[ -f $R/store/index.jsonl ]]; then
		sed -i 's/"time":"[^"]*"/"time":"<TIME>"/g' "$R/store/index.jsonl"
	fi
	# A pack (store/packs/, a batch of more than 8 new texts) is named by the order its texts
	# were written in, which concurrent writes choose: each packed text is compared as the
	# file of its own a store without packs holds (store/ab/HASH, mode 0600).
	local idx h off size
	for idx in "$R"/store/packs/*.idx; do
		[[ -f $idx ]] || continue
		while read -r h off size; do
			[[ $h =~ ^[0-9a-f]{64}$ ]] || continue
			mkdir -p -m 700 "$R/store/${h:0:2}"
			[[ -e $R/store/${h:0:2}/$h ]] ||
				(umask 077 && dd if="${idx%.idx}.pack" of="$R/store/${h:0:2}/$h" bs=64K \
					iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none)
		done <"$idx"
	done
	rm -rf "$R/store/packs"
	# ctx-recall's segments are named at random and hold a hash of the index.jsonl they were
	# made from (bytes 16-23), times and all: that hash is blanked and each is named by what
	# is left, so that the same index of the same lines compares equal.
	local seg sum
	for seg in "$R"/store/recall/seg-*.rix; do
		[[ -f $seg ]] || continue
		printf '\0\0\0\0\0\0\0\0' | dd of="$seg" bs=1 seek=16 conv=notrunc status=none
		sum=$(sha256sum "$seg" | cut -c1-16)
		mv "$seg" "$R/store/recall/seg-$sum.rix"
	done
	mv "$R" "$S/files"
}

# step N STDIN CMD...: run CMD (one step of a case) with stdin from STDIN; uses run_side's
# ex and S.
step() {
	local n=$1 in=$2 rc=0
	shift 2
	"${ex[@]}" "$@" <"$in" >"$S/stdout.$n" 2>"$S/stderr.$n" || rc=$?
	echo "$rc" >"$S/rc.$n"
	if [[ $side == base ]]; then # how to run it again, for the report
		printf '%q ' "${ex[@]:4}" "$@" >>"$d/command.txt"
		printf '< %q\n' "$in" >>"$d/command.txt"
	fi
}

# short_diff A B [split]: the first lines of a diff, long lines cut; split breaks JSON at
# commas first, so a changed member shows as its own line.
short_diff() {
	cmp "$1" "$2" 2>&1 | sed 's|'"$d"'/||g' || true
	if [[ ${3:-} == split ]]; then
		diff <(tr ',' '\n' <"$1") <(tr ',' '\n' <"$2") | head -n 8 | cut -c1-200 || true
	else
		diff "$1" "$2" | head -n 8 | cut -c1-200 || true
	fi
}

# modes_differ: the paths and modes of the files each side left differ (printed).
modes_differ() {
	find "$d/base/files" "$d/new/files" -printf '%H\t%M\t%P\n' | awk -F'\t' -v b="$d/base/files" '
		{ c[$2 "\t" $3] += ($1 == b) ? 1 : -1 }
		END { for (k in c) if (c[k]) { print (c[k] > 0 ? "only in base: " : "only in new: ") k; bad = 1 }; exit !bad }'
}

# run_case LINE: both sides of one case, compared; appends one line to $WORK/results.
run_case() {
	local id kind input tool args d what=() n s f steps="" rcs runs
	local -a argv
	IFS=$'\t' read -r id kind input tool args <<<"$1"
	read -r -a argv <<<"$args"
	d=$WORK/runs/$id
	run_side base
	run_side new
	rcs=("$d"/base/rc.* "$d"/new/rc.*)
	runs=${#rcs[@]}
	# The fast path: every output byte for byte (stdout, stderr, exit status of each step,
	# the files written), then the files' modes.
	if diff -r -q "$d/base" "$d/new" >/dev/null 2>&1 && ! modes_differ >/dev/null; then
		rm -rf "$d"
		printf 'same\t%s\t%s\n' "$id" "$runs" >>"$WORK/results"
		return 0
	fi
	# What differs, per step: exit status, stdout, the stats line, the rest of stderr.
	for f in "${rcs[@]}"; do
		n=${f##*.}
		[[ " $steps " == *" $n "* ]] || steps="$steps $n"
	done
	for n in $steps; do
		for s in base new; do
			touch "$d/$s/rc.$n" "$d/$s/stdout.$n" "$d/$s/stderr.$n"
			grep '^{"tool":"ctx-' "$d/$s/stderr.$n" >"$d/$s/stats.$n" || true
			grep -v '^{"tool":"ctx-' "$d/$s/stderr.$n" >"$d/$s/errtext.$n" || true
		done
		cmp -s "$d/base/rc.$n" "$d/new/rc.$n" || what+=("exit.$n")
		cmp -s "$d/base/stdout.$n" "$d/new/stdout.$n" || what+=("stdout.$n")
		cmp -s "$d/base/stats.$n" "$d/new/stats.$n" || what+=("stats.$n")
		cmp -s "$d/base/errtext.$n" "$d/new/errtext.$n" || what+=("stderr.$n")
	done
	# Every file left in the run folder (-o OUT, the store): its bytes, path and mode.
	{
		modes_differ || true
		diff -r -q "$d/base/files" "$d/new/files" || true
	} >"$d/files.diff" 2>&1
	[[ ! -s $d/files.diff ]] || what+=("files")
	((${#what[@]} > 0)) || what=("unknown") # cannot happen: the fast path found a difference
	{
		printf 'case %s: %s %s  (%s)\ninput: %s\ndiffers: %s\n' "$id" "$tool" "$args" "$kind" "${input#"$ROOT/"}" "${what[*]}"
		printf 'run in %s (gone), one line a step (the new side: PATH=%s):\n' "$d/run" "$WORK/bin-new"
		sed 's/^/    /' "$d/command.txt"
		for f in "${what[@]}"; do
			case $f in
			exit.*) printf -- '- exit status, step %s: base %s, new %s\n' "${f#exit.}" "$(cat "$d/base/rc.${f#exit.}")" "$(cat "$d/new/rc.${f#exit.}")" ;;
			stdout.* | stats.*) printf -- '- %s:\n' "$f"; short_diff "$d/base/$f" "$d/new/$f" split ;;
			stderr.*) printf -- '- %s (without the stats line):\n' "$f"; short_diff "$d/base/errtext.${f#stderr.}" "$d/new/errtext.${f#stderr.}" ;;
			files)
				printf -- '- files written:\n'
				sed "s|$d/||g" "$d/files.diff" | head -n 8
				local a b
				sed -n 's/^Files \(.*\) and \(.*\) differ$/\1\t\2/p' "$d/files.diff" | head -n 2 |
					while IFS=$'\t' read -r a b; do short_diff "$a" "$b" split; done
				;;
			esac
		done
	} >"$d/report.txt"
	printf 'diff\t%s\t%s\t%s\n' "$id" "$runs" "${what[*]}" >>"$WORK/results"
	# Keep this case; full outputs only for the first DIFF_KEEP_MAX of them.
	local slot
	slot=$(grep -c '^diff' "$WORK/results")
	rm -f "$d/files.diff" "$d"/base/stats.* "$d"/base/errtext.* "$d"/new/stats.* "$d"/new/errtext.*
	if ((slot <= DIFF_KEEP_MAX)); then
		mv "$d" "$DIFF_KEEP_DIR/case-$id"
	else
		mkdir -p "$DIFF_KEEP_DIR/case-$id"
		mv "$d/report.txt" "$d/command.txt" "$DIFF_KEEP_DIR/case-$id/"
		rm -rf "$d"
	fi
}

# run_cases LINE...: several cases in one bash process; none once $WORK/stop exists.
run_cases() {
	local line
	for line; do
		[[ ! -e $WORK/stop ]] || return 0
		run_case "$line"
	done
}

export WORK=$work ROOT=$root DIFF_NOW=$now DIFF_TIMEOUT_S=$timeout_s DIFF_KEEP_DIR=$keep DIFF_KEEP_MAX=$keep_max
export -f run_side step short_diff modes_differ run_case run_cases

# --- running all ---------------------------------------------------------------------------

: >"$work/results"
mkdir -p "$work/runs"
log "running $n_cases cases on ${#inputs[@]} inputs, $jobs at a time"
t_run=$SECONDS
(
	while sleep 30; do
		log "$(wc -l <"$work/results")/$n_cases cases done ($((SECONDS - t_run)) s)"
	done
) &
progress_pid=$!
# Cases go in batches of 10 to a bash process: fewer processes, still balanced.
# In the background, so that a signal reaches the trap at once (cleanup stops the workers).
runner_ok=1
# A runner that stops on an error says which command of which case (set -E: in the
# functions too), since it skips the rest of its batch.
xargs -d '\n' -n 10 -P "$jobs" bash -c 'set -Eeuo pipefail
	trap '\''echo "differential: case runner stopped: \"$BASH_COMMAND\" exited $? (${FUNCNAME[0]:-} line $LINENO) in case ${id:-?}" >&2'\'' ERR
	run_cases "$@"' _ <"$cases" &
xargs_pid=$!
wait "$xargs_pid" || runner_ok=0
xargs_pid=""
kill "$progress_pid" 2>/dev/null || true
wait "$progress_pid" 2>/dev/null || true
progress_pid=""
secs=$((SECONDS - t_run))

# --- summary -------------------------------------------------------------------------------

n_done=$(wc -l <"$work/results")
n_same=$(grep -c '^same' "$work/results" || true)
n_diff=$(grep -c '^diff' "$work/results" || true)
n_inv=$(awk -F'\t' '{ n += $3 } END { print n + 0 }' "$work/results")

echo "ctxkit differential: $base_label vs $new_label"
echo "inputs: ${#inputs[@]}; cases: $n_cases ($n_inv tool invocations); time: ${secs} s running, $((SECONDS - t_start)) s in all"
echo "identical: $n_same; different: $n_diff"
if ((n_done != n_cases || !runner_ok)); then
	echo "error: only $n_done of $n_cases cases finished (a case runner failed: see above)" >&2
fi
if ((n_diff > 0)); then
	echo
	echo "differences by tool, flags and kind (cases):"
	awk -F'\t' 'FNR == NR { if ($1 == "diff") d[$2] = 1; next } $1 in d { print $4, $5, "(" $2 ")" }' \
		"$work/results" "$cases" | sort | uniq -c | sort -rn
	echo
	awk -F'\t' '$1 == "diff" { print $2 }' "$work/results" | sort -n | head -n "$show" |
		while read -r id; do
			sed -n '1,40p' "$keep/case-$id/report.txt"
			echo
		done
	if ((n_diff > show)); then
		echo "($((n_diff - show)) more; set DIFF_SHOW to see more)"
	fi
	echo "kept: $keep (case-ID/report.txt; full outputs of at most $keep_max cases in base/ and new/)"
	exit 1
fi
if ((n_done != n_cases || !runner_ok)); then
	exit 2
fi
echo "all identical"
