#!/bin/sh
# Writes the shell completion scripts of every tool into completions/{bash,zsh,fish}, as
# goreleaser's before hook does for the archives and packages. They are generated from
# each tool's flags by 'ctxkit completion', so they are never edited by hand.
set -eu
cd "$(dirname "$0")/.."
rm -rf completions
for shell in bash zsh fish; do
	mkdir -p "completions/$shell"
	go run ./cmd/ctxkit completion "$shell" --dir "completions/$shell"
done
