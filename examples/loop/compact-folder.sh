#!/bin/sh
# Compact every session of a folder into another folder, the originals left alone, and
# print what each saved.
#
#   compact-folder.sh ~/.claude/projects/myproj compacted
#
# What ctx-persist and ctx-snip take out is kept in OUT/.ctx-store, so that
# 'ctx-persist --restore' and the placeholders' references still find it.
set -eu
in=${1:?usage: compact-folder.sh SESSIONS_DIR OUT_DIR}
out=${2:?usage: compact-folder.sh SESSIONS_DIR OUT_DIR}
mkdir -p "$out"
export CTX_STORE="$out/.ctx-store"
for f in "$in"/*.jsonl; do
	[ -e "$f" ] || continue # an empty folder
	name=$(basename "$f")
	# A failing stage hands the next one nothing, which it refuses: set -e stops the loop.
	ctx-persist "$f" | ctx-budget | ctx-snip > "$out/$name"
	# ctx-count --vs compares the two: one JSON line whose "saved" is the tokens saved.
	saved=$(ctx-count "$f" --vs "$out/$name" | sed 's/.*"saved":\([0-9-]*\).*/\1/')
	echo "$name: $saved tokens saved"
done
