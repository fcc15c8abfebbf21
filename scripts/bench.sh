#!/usr/bin/env bash
# bench.sh — throughput and peak memory of the ctx-* filters against cat and jq (DESIGN.md §8).
#
# Generates documents of every format (Claude Code and Codex JSONL; Anthropic, OpenAI and
# Responses JSON) with scripts/gendoc (cached under
# $BENCH_DIR so reruns are fast), adds the real transcripts of ../shared/corpus when present
# (all files in one run; each file its own document), and prints a Markdown table to stdout.
# Progress goes to stderr.
#
#   scripts/bench.sh                     10 and 100 MB inputs of each format, best of 3 runs
#   BENCH_QUICK=1 scripts/bench.sh       10 MB only, 1 run
#
# Environment:
#   BENCH_SIZES="10 100"   input sizes in MB
#   BENCH_FORMATS="claude-code codex anthropic openai responses"   generated formats
#   BENCH_RUNS=3           runs per measurement; the fastest is reported
#   BENCH_QUICK=1          same as BENCH_SIZES=10 BENCH_RUNS=1
#   BENCH_DIR=/tmp/ctxkit-bench   where generated inputs are cached
#   CTX_BIN_DIR=DIR        use the ctx-* binaries in DIR instead of building ./cmd/...
#   BENCH_BEFORE=DIR       also time the filters (and the pipeline, with a cold count cache)
#                          of another build in DIR, each row after the same tool's, marked
#                          "(before)": before and after in one run, under the same load
#   BENCH_CORPUS=0         leave the real transcripts out (generated inputs only)
#   BENCH_SKIP="ctx-replay"   tools left out of the table (ctx-replay replays every turn:
#                          minutes on a 10 MB input); the pipeline rows are kept
#
# jq is timed twice: as `jq length FILE` on JSON and `jq -c length FILE` on JSONL (one value
# per line: reading only), and as `jq -c . FILE` (reading and writing the document, as a
# filter does); ×jq and ×jq-c. are the ratios to each. "CPU s" is user plus system time
# (every process and thread of the command: a Go tool's collector runs on the second core
# while jq runs on one), the least of the runs, and "CPU ×jq-c." its ratio to jq -c .'s. Seconds come from $EPOCHREALTIME around /usr/bin/time (whose %e has only 10 ms
# resolution); peak RSS is /usr/bin/time's %M. "stdin RSS/input" is the peak of the same
# command reading the document from a pipe (`cat FILE | tool`, one run: memory is not timed),
# which must not cost more than the file named as an argument.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

sizes=${BENCH_SIZES:-10 100}
formats=${BENCH_FORMATS:-claude-code codex anthropic openai responses}
runs=${BENCH_RUNS:-3}
if [[ ${BENCH_QUICK:-} == 1 ]]; then
	sizes=10
	runs=1
fi
bench_dir=${BENCH_DIR:-/tmp/ctxkit-bench}
mkdir -p "$bench_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# ctx-persist, ctx-snip and ctx-summarize --offload write into a store: every timed run gets
# an empty one of its own (CTX_STORE, set by measure), so a row is a first run that writes
# every file it stores, not one that finds them stored by the run before. The stores are
# removed only at the end: on a file system without a journal (ext4 as this machine's) a
# new inode is not taken from those freed in the last 30 s, and each creation walks past
# them, so deleting one run's store would make the next run's creations cost more.
store_seq=0
# The count cache shared between runs (tokens.DiskCache) is emptied before every timed run,
# so rows are first runs; the pipeline is timed with it empty and once it holds the counts.
export CTX_CACHE_DIR=$work/cache

log() { printf 'bench: %s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------------------------

as_root() {
	if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi
}

if [[ ! -x /usr/bin/time ]]; then
	log "installing GNU time"
	as_root apt-get update -qq && as_root apt-get install -y -qq time >&2 ||
		{ log "error: /usr/bin/time is missing and could not be installed"; exit 1; }
fi

have_jq=1
if ! command -v jq >/dev/null; then
	log "installing jq"
	if ! { as_root apt-get update -qq && as_root apt-get install -y -qq jq >&2; }; then
		log "warning: jq could not be installed; skipping the jq rows and ratios"
		have_jq=0
	fi
fi

if [[ -n ${CTX_BIN_DIR:-} ]]; then
	bin=$CTX_BIN_DIR
	log "using binaries in $bin"
else
	bin=$work/bin
	mkdir -p "$bin"
	for d in cmd/ctx-*/; do
		[[ -d $d ]] || continue
		name=$(basename "$d")
		if ! go build -o "$bin/$name" "./$d" 2>"$work/build.err"; then
			log "warning: build $name failed, skipping it: $(head -n 1 "$work/build.err")"
		fi
	done
fi
before=${BENCH_BEFORE:-}
if [[ -n $before && ! -d $before ]]; then log "error: BENCH_BEFORE=$before is no directory"; exit 2; fi
pipeline=() pipeline_before=()
for t in ctx-persist ctx-budget ctx-snip ctx-summarize ctx-trim; do
	if [[ -x $bin/$t ]]; then pipeline+=("$bin/$t"); fi
	if [[ -n $before && -x $before/$t ]]; then pipeline_before+=("$before/$t"); fi
done
tools=()
skip=" ${BENCH_SKIP:-} "
for f in "$bin"/ctx-*; do
	name=$(basename "$f")
	case $name in
	ctx-count | ctx-proxy | ctx-recall) continue ;; # counted below; a server; reads a store, not a document
	esac
	if [[ -x $f && $skip != *" $name "* ]]; then tools+=("$name"); fi
done
if [[ ! -x $bin/ctx-count ]]; then log "warning: no ctx-count in $bin"; fi

# --- inputs ----------------------------------------------------------------------------------

# Cache keys include a hash of the generator, so a changed generator regenerates.
gen_key=$(cat internal/testgen/*.go scripts/gendoc/main.go | sha256sum | cut -c1-10)
go build -o "$work/gendoc" ./scripts/gendoc

inputs=()
for mb in $sizes; do
	for format in $formats; do
		ext=json
		if [[ $format == claude-code || $format == codex ]]; then ext=jsonl; fi
		file=$bench_dir/$format-${mb}MB-$gen_key.$ext
		if [[ ! -s $file ]]; then
			rm -f "$bench_dir/$format-${mb}MB-"*.$ext # inputs of an older generator
			log "generating $file"
			"$work/gendoc" -format "$format" -size "${mb}MB" -seed 1 -images -o "$file"
		fi
		inputs+=("$file")
	done
done

corpus=$root/../shared/corpus
if [[ ${BENCH_CORPUS:-1} == 0 ]]; then
	log "BENCH_CORPUS=0: leaving the corpus out"
elif [[ -d $corpus ]]; then
	# The corpus is measured as what it is, many files: cat, jq and ctx-count take them all
	# in one process; a filter that takes one document runs once per file.
	mapfile -d '' corpus_files < <(find "$corpus" -type f \( -name '*.jsonl' -o -name '*.traj' -o -name '*.json' \) ! -name '*.meta.json' -size +0 -print0 | sort -z)
	inputs+=("$corpus")
else
	log "no corpus at $corpus, skipping it"
fi

# --- measuring -------------------------------------------------------------------------------

# measure CMD... sets m_secs, m_cpu (user+system seconds, the least of the runs), m_rss (KB)
# and m_status (exit status of the failing run, or 0).
measure() {
	local best="" bestcpu="" rss=0 i t0 t1 secs r cpu
	m_status=0
	for ((i = 0; i < runs; i++)); do
		if [[ -z ${keep_cache:-} ]]; then rm -rf "$CTX_CACHE_DIR"; fi
		export CTX_STORE=$work/stores/$((++store_seq))
		t0=$EPOCHREALTIME
		if ! /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" >/dev/null 2>"$work/stderr"; then
			m_status=$(sed -n 's/^Command exited with non-zero status \([0-9]*\).*/\1/p; s/^Command terminated by signal \([0-9]*\).*/signal \1/p' "$work/time")
			m_status=${m_status:-1}
			log "$(basename "$1") failed ($m_status): $(head -n 1 "$work/stderr")"
			return 0
		fi
		t1=$EPOCHREALTIME
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
		r=$(tail -n 1 "$work/time" | awk '{ print $2 }')
		cpu=$(tail -n 1 "$work/time" | awk '{ printf "%.2f", $3 + $4 }')
		if [[ -z $best ]] || awk -v s="$secs" -v b="$best" 'BEGIN { exit !(s < b) }'; then
			best=$secs
		fi
		if [[ -z $bestcpu ]] || awk -v s="$cpu" -v b="$bestcpu" 'BEGIN { exit !(s < b) }'; then
			bestcpu=$cpu
		fi
		if ((r > rss)); then rss=$r; fi
	done
	m_secs=$best
	m_cpu=$bestcpu
	m_rss=$rss
}

printf '| input | size MB | tool | seconds | MB/s | peak RSS MB | RSS/input | stdin RSS/input | ×cat | ×jq | ×jq-c. | CPU s | CPU ×jq-c. |\n'
printf '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'

row() { # input label [stdin-rss-KB]; uses size_mb, m_*, cat_secs, jq_secs, jqc_secs, jqc_cpu
	local input=$1 label=$2 stdin_rss=${3:-}
	if [[ $m_status != 0 ]]; then
		printf '| %s | %.1f | %s | failed (exit %s) | | | | | | | | | |\n' "$input" "$size_mb" "$label" "$m_status"
		return
	fi
	awk -v in_="$input" -v mb="$size_mb" -v tool="$label" -v s="$m_secs" -v rss="$m_rss" -v srss="$stdin_rss" \
		-v cat="$cat_secs" -v jq="${jq_secs:-}" -v jqc="${jqc_secs:-}" \
		-v cpu="${m_cpu:-}" -v jqccpu="${jqc_cpu:-}" 'BEGIN {
		t = (s > 0.0005) ? s : 0.0005
		rmb = rss / 1024
		xjq = (jq == "") ? "" : sprintf("%.2f", s / jq)
		xjqc = (jqc == "") ? "" : sprintf("%.2f", s / jqc)
		sr = (srss == "") ? "" : sprintf("%.2f", srss / 1024 / mb)
		xcpu = (jqccpu == "" || cpu == "" || jqccpu < 0.005) ? "" : sprintf("%.2f", cpu / jqccpu)
		printf "| %s | %.1f | %s | %.3f | %.0f | %.1f | %.2f | %s | %.2f | %s | %s | %s | %s |\n",
			in_, mb, tool, s, mb / t, rmb, rmb / mb, sr, s / (cat > 0.0005 ? cat : 0.0005), xjq, xjqc, cpu, xcpu
	}'
}

# stdin_rss CMD... FILE: the peak RSS (KB) of CMD reading FILE from a pipe, one run, or ""
# when it fails. cat's own RSS is small, so the largest child is CMD.
stdin_rss() {
	local file=${*: -1}
	set -- "${@:1:$#-1}"
	if ! /usr/bin/time -f '%M' -o "$work/time" bash -c 'cat "$1" | "${@:2}"' _ "$file" "$@" >/dev/null 2>"$work/stderr"; then
		return 0
	fi
	tail -n 1 "$work/time"
}

# each CMD FILE...: run CMD once per file (for filters that take one document).
each() {
	local cmd=$1
	shift
	for f in "$@"; do $cmd "$f" >/dev/null || return; done # $cmd may carry flags
}
export -f each

for file in "${inputs[@]}"; do
	name=$(basename "$file")
	files=("$file")
	if [[ -d $file ]]; then
		files=("${corpus_files[@]}")
		name="corpus (${#files[@]} files)"
	fi
	bytes=$(cat "${files[@]}" | wc -c)
	size_mb=$(awk -v b="$bytes" 'BEGIN { printf "%.3f", b / 1048576 }')
	log "measuring $name ($size_mb MB, $runs run(s) each)"

	# cat and jq first: every row's ratios refer to them.
	measure cat "${files[@]}"
	cat_secs=$m_secs cat_cpu=$m_cpu cat_rss=$m_rss
	jq_secs="" jq_cpu="" jq_status=0 jq_label="" jqc_secs="" jqc_cpu="" jqc_status=0
	if ((have_jq)); then
		if [[ $file == *.jsonl || -d $file ]]; then
			jq_label="jq -c length"
			measure jq -c length "${files[@]}"
		else
			jq_label="jq length"
			measure jq length "$file"
		fi
		jq_status=$m_status
		if [[ $m_status == 0 ]]; then jq_secs=$m_secs jq_cpu=$m_cpu jq_rss=$m_rss; fi
		measure jq -c . "${files[@]}"
		jqc_status=$m_status jqc_secs="" jqc_rss=$m_rss
		if [[ $m_status == 0 ]]; then jqc_secs=$m_secs jqc_cpu=$m_cpu; fi
	fi
	m_status=0 m_secs=$cat_secs m_cpu=$cat_cpu m_rss=$cat_rss
	row "$name" "cat"
	if ((have_jq)); then
		m_status=$jq_status m_secs=${jq_secs:-0} m_cpu=${jq_cpu:-} m_rss=${jq_rss:-0}
		row "$name" "$jq_label"
		m_status=$jqc_status m_secs=${jqc_secs:-0} m_cpu=${jqc_cpu:-} m_rss=${jqc_rss:-0}
		row "$name" "jq -c ."
	fi

	if [[ -x $bin/ctx-count ]]; then
		for tk in estimate o200k; do
			measure "$bin/ctx-count" --tokenizer "$tk" "${files[@]}"
			srss=""
			if [[ ! -d $file && $m_status == 0 ]]; then srss=$(stdin_rss "$bin/ctx-count" --tokenizer "$tk" "$file"); fi
			row "$name" "ctx-count --tokenizer $tk" "$srss"
		done
	fi
	runs_of=()
	for t in "${tools[@]}"; do
		runs_of+=("$t:$bin")
		if [[ -n $before ]]; then runs_of+=("$t:$before"); fi
	done
	for tb in "${runs_of[@]}"; do
		t=${tb%%:*} tbin=${tb#*:}
		[[ -x $tbin/$t ]] || continue
		cmd=("$tbin/$t")
		label=$t
		if [[ $t == ctx-convert ]]; then
			# An API document needs a target (another format's); a transcript has its own.
			to=openai
			if [[ $name == openai-* ]]; then to=anthropic; fi
			cmd+=(--to "$to") label="$t --to $to"
		fi
		if [[ $tbin == "${before:-}" ]]; then label+=" (before)"; fi
		srss=""
		if [[ -d $file ]]; then
			measure bash -c 'each "$@"' _ "${cmd[*]}" "${files[@]}"
		else
			measure "${cmd[@]}" "$file"
			if [[ $m_status == 0 && $tbin == "$bin" ]]; then srss=$(stdin_rss "${cmd[@]}" "$file"); fi
		fi
		row "$name" "$label" "$srss"
	done
	# The whole pipeline, each stage reading the one before it through a pipe. Peak RSS is
	# the largest stage's (GNU time reports the largest child).
	if [[ ! -d $file ]] && (( ${#pipeline[@]} == 5 )); then
		measure bash -c '"$1" < "$6" | "$2" | "$3" | "$4" | "$5"' _ "${pipeline[@]}" "$file"
		row "$name" "pipeline persist→budget→snip→summarize→trim"
		keep_cache=1 measure bash -c '"$1" < "$6" | "$2" | "$3" | "$4" | "$5"' _ "${pipeline[@]}" "$file"
		row "$name" "the same pipeline again (count cache warm)"
		if (( ${#pipeline_before[@]} == 5 )); then
			measure bash -c '"$1" < "$6" | "$2" | "$3" | "$4" | "$5"' _ "${pipeline_before[@]}" "$file"
			row "$name" "pipeline (before)"
		fi
	fi
done
