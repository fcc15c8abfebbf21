#!/bin/sh
# Makes links/ctx-count -> ctxkit and the other tools' names, for goreleaser to put beside
# the ctxkit binary in the archives: one binary, each name a link to it.
set -eu
cd "$(dirname "$0")/.."
rm -rf links
mkdir links
for name in $(go run ./cmd/ctxkit --help | sed -n 's/^  \(ctx-[a-z]*\) .*/\1/p'); do
	ln -s ctxkit "links/$name"
done
