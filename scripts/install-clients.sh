#!/usr/bin/env bash
# Installs the real LLM clients the real-client tests (clients_test.go) drive against a fake
# upstream: Claude Code, Codex CLI and the official Anthropic and OpenAI SDKs for Node, all
# from the npm registry, into one cache folder outside the repository.
#
# Test set-up only, never part of the build: every failure here (no node, no npm, no registry)
# ends with status 0 and a message, and the tests that need a missing client skip.
#
#   CTXKIT_CLIENTS   where to install (default ~/.cache/ctxkit-clients)
#
# Idempotent: when every package is already there it does nothing but say where.
set -uo pipefail

dir=${CTXKIT_CLIENTS:-$HOME/.cache/ctxkit-clients}
packages=(@anthropic-ai/claude-code @openai/codex @anthropic-ai/sdk openai)

have_all() {
  local p
  for p in "${packages[@]}"; do
    [[ -f $dir/node_modules/$p/package.json ]] || return 1
  done
}

if have_all; then
  echo "install-clients: clients already in $dir"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  # Debian's nodejs and npm, when this is a Debian machine we may install on.
  if command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
    echo "install-clients: installing nodejs and npm from Debian"
    apt-get install -y -qq nodejs npm >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nodejs npm >/dev/null 2>&1; }
  fi
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "install-clients: node or npm not available: the real-client tests will skip"
  exit 0
fi

mkdir -p "$dir" || { echo "install-clients: cannot create $dir: the real-client tests will skip"; exit 0; }
[[ -f $dir/package.json ]] || echo '{"name":"ctxkit-clients","private":true}' >"$dir/package.json"

echo "install-clients: installing ${packages[*]} into $dir"
# A time limit, so that a registry that does not answer cannot hold up CI.
if ! timeout 600 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${packages[@]}"; then
  echo "install-clients: npm install failed (registry unavailable?): the real-client tests will skip"
  exit 0
fi
echo "install-clients: clients installed in $dir"
