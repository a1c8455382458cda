#!/usr/bin/env bash
# Runs an adapter's test as an app gets the framework: a scratch app under
# target/js-apps/<name> with the framework pinned by the package-lock.json
# in js/test/apps/<name>/ (npm ci only when the lockfile changed), then
# run.test.mjs from there against this working tree's js/ (ENGRAM_JS).
# Usage (after scripts/build-js): js/test/apps/scratch-app.sh NAME [oldest]
# `oldest` takes <name>/oldest/package.json and package-lock.json instead:
# the oldest versions supported, in target/js-apps/<name>-oldest.
set -euo pipefail

NAME=${1:?usage: scratch-app.sh NAME [oldest]}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/$NAME" && pwd)
JS=$(cd "$HERE/../../.." && pwd)
PINS="$HERE"
APP="$JS/../target/js-apps/$NAME"
if [[ "${2:-}" == oldest ]]; then
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
