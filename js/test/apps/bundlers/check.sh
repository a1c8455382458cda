#!/usr/bin/env bash
# The packed npm package through real bundlers, as a user's app gets it:
# `npm pack` of js/, then in a scratch app (target/js-apps/bundlers) that
# pins its tools in the package-lock.json beside this file (Vite 8, esbuild,
# wrangler 4.86: the last wrangler that runs on Node 20):
#   npm ci (only when the lockfile changed: node_modules is kept between
#   runs), `npm install <tarball>` (no flags that relax peer checks), then
#   vite build (index.html + browser-app.js), esbuild --platform=node
#   (node-app.js), esbuild --platform=browser (esbuild-browser-app.js, the
#   documented init(url) recipe), and `wrangler deploy --dry-run --outdir` of
#   js/examples/worker (its worker.js and wrangler.jsonc); run.test.mjs then
#   loads, runs and serves each (Chromium, node, workerd).
# Cold: about 15 s of npm ci (242 MB of tools, from npm's cache when warm),
# 3 s of builds, 5 s of tests. Usage: js/test/apps/bundlers/check.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JS=$(cd "$HERE/../../.." && pwd)
APP="$JS/../target/js-apps/bundlers"
mkdir -p "$APP"
APP=$(cd "$APP" && pwd)
export WRANGLER_SEND_METRICS=false

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
timed() {
  local what=$1 started=$SECONDS
  shift
  quiet "$@"
  echo "bundlers: $what ($((SECONDS - started)) s)"
}

# The tools, from the committed lockfile; skipped when it is unchanged.
if ! cmp -s "$HERE/package-lock.json" "$APP/.tools-lock.json" || [ ! -d "$APP/node_modules/vite" ]; then
  rm -rf "$APP"/node_modules "$APP"/package.json "$APP"/package-lock.json
  cp "$HERE/package.json" "$HERE/package-lock.json" "$APP/"
  timed "npm ci: vite, esbuild, wrangler" bash -c "cd '$APP' && npm ci --no-audit --no-fund"
  cp "$HERE/package-lock.json" "$APP/.tools-lock.json"
fi

# The package as published, installed the way users install it.
rm -rf "$APP"/dist-* "$APP"/worker "$APP"/*.tgz
cp "$HERE/package.json" "$HERE/package-lock.json" "$HERE/index.html" "$HERE/browser-app.js" "$HERE/esbuild-browser-app.js" "$HERE/node-app.js" "$APP/"
mkdir -p "$APP/worker"
cp "$JS/examples/worker/worker.js" "$JS/examples/worker/wrangler.jsonc" "$APP/worker/"
tarball=$(cd "$JS" && npm pack --silent --pack-destination "$APP")
timed "npm install $tarball" bash -c "cd '$APP' && npm install --no-audit --no-fund './$tarball'"

cd "$APP"
timed "vite build (production)" node_modules/.bin/vite build --outDir dist-vite
timed "esbuild --platform=node" node_modules/.bin/esbuild node-app.js --bundle --platform=node --format=esm --outfile=dist-node/app.mjs
timed "esbuild --platform=browser" node_modules/.bin/esbuild esbuild-browser-app.js --bundle --platform=browser --format=esm \
  --loader:.wasm=file --outdir=dist-esbuild-browser
sed 's/browser-app\.js/esbuild-browser-app.js/' index.html >dist-esbuild-browser/index.html
timed "wrangler deploy --dry-run" bash -c "cd worker && ../node_modules/.bin/wrangler deploy --dry-run --outdir ../dist-worker"

cd "$JS"
APP="$APP" node --test --test-reporter=spec test/apps/bundlers/run.test.mjs
