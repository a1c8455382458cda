#!/usr/bin/env bash
# engram/langchain under the real langchain createAgent, as an app gets it:
# a scratch app (target/js-apps/langchain) with langchain and @langchain/core
# pinned in the package-lock.json beside this file (npm ci only when the
# lockfile changed), then run.test.mjs from there against this working
# tree's js/ (ENGRAM_JS).
# Usage: js/test/apps/langchain/check.sh [oldest] (after scripts/build-js);
# `oldest` uses oldest/package.json and oldest/package-lock.json instead:
# the oldest versions supported, in target/js-apps/langchain-oldest.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JS=$(cd "$HERE/../../.." && pwd)
PINS="$HERE"
APP="$JS/../target/js-apps/langchain"
if [[ "${1:-}" == oldest ]]; then
  PINS="$HERE/oldest"
  APP="$APP-oldest"
fi
mkdir -p "$APP"
APP=$(cd "$APP" && pwd)

if ! cmp -s "$PINS/package-lock.json" "$APP/package-lock.json" || [[ ! -d "$APP/node_modules" ]]; then
  cp "$PINS/package.json" "$PINS/package-lock.json" "$APP/"
  log=$(mktemp)
  if ! (cd "$APP" && npm ci --no-audit --no-fund) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
fi
cp "$HERE/run.test.mjs" "$APP/"
cd "$APP"
ENGRAM_JS="$JS" node --test --test-reporter=spec run.test.mjs
