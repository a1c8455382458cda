#!/usr/bin/env bash
# The npm package as a user gets it: `npm pack` of js/, `npm i <tarball>` in
# a fresh project (offline: the package has no dependencies), then
#   - app.ts, importing from "engram" and every subpath, passes `tsc --strict`
#     against the installed types, compiles, and runs on Node (its
#     `await using` included);
#   - wrong.ts (`import { Memory } from "engram/sqlite"`) fails tsc with
#     TS2305, under "nodenext" and "bundler" resolution;
#   - use.mjs opens a memory with no model (the offline model) over
#     memoryStore, adds messages and gets a view;
#   - ai.mjs imports engram/ai-sdk with `ai` (the optional peer dependency,
#     at js/'s locked version, from npm's cache) installed beside it, and runs
#     the middleware around the SDK's MockLanguageModelV2 (plain JavaScript:
#     `ai`'s own types need lib DOM, which app.ts's strict check leaves out);
#   - the `engram-mcp` bin is installed: `--help` prints its usage, and run
#     without its optional peer dependencies it exits 2 naming the command
#     that installs them (@modelcontextprotocol/sdk and zod);
#   - the tarball holds README.md, LICENSE-MIT, LICENSE-APACHE and two .wasm:
#     the engine (pkg/web) and the offline model (pkg/offline), one copy each,
#     and as many files, and about the size, as docs/javascript.md says.
# Uses the TypeScript of js/node_modules. Usage: js/test/package/check.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JS=$(cd "$HERE/../.." && pwd)
TSC="$JS/node_modules/.bin/tsc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tarball=$(cd "$JS" && npm pack --silent --pack-destination "$tmp")
tarball="$tmp/$tarball"
listing=$(tar -tzf "$tarball")
for f in README.md LICENSE-MIT LICENSE-APACHE package.json node.js types/sqlite.d.ts; do
  grep -qx "package/$f" <<<"$listing" || { echo "the tarball has no $f" >&2; exit 1; }
done
wasms=$(grep '\.wasm$' <<<"$listing" | sort | tr '\n' ' ' || true)
[[ $wasms == "package/pkg/offline/engram_offline_bg.wasm package/pkg/web/engram_bg.wasm " ]] || {
  echo "the tarball holds these .wasm files, not pkg/web/engram_bg.wasm and pkg/offline/engram_offline_bg.wasm: $wasms" >&2
  exit 1
}
files=$(wc -l <<<"$listing")
bytes=$(wc -c <"$tarball")
echo "tarball: $(basename "$tarball"), $bytes bytes, $files files, two .wasm"
# The count docs/javascript.md states ("..., N files;") is the packed one.
stated=$(grep -o '[0-9]* files; the step prints its size' "$JS/../docs/javascript.md" | grep -o '^[0-9]*' || true)
[[ "$stated" == "$files" ]] || {
  echo "docs/javascript.md says the tarball has ${stated:-no stated number of} files; it has $files:" >&2
  sed 's/^/  /' <<<"$listing" >&2
  exit 1
}
# And the size it states ("about N KB packed"), within 5 %.
kb=$(tr "\n" " " <"$JS/../docs/javascript.md" | grep -o "about *[0-9]* KB packed" | grep -o '[0-9][0-9]*' || true)
[[ -n "$kb" ]] && (( bytes * 100 >= kb * 1000 * 95 && bytes * 100 <= kb * 1000 * 105 )) || {
  echo "docs/javascript.md says the tarball is about ${kb:-no stated} KB packed; it is $bytes bytes" >&2
  exit 1
}

app="$tmp/app"
mkdir -p "$app"
cp "$HERE/app.ts" "$HERE/wrong.ts" "$HERE/use.mjs" "$HERE/ai.mjs" "$HERE/tsconfig.json" "$app/"
echo '{ "name": "fresh-app", "private": true, "type": "module" }' >"$app/package.json"
(cd "$app" && npm install --offline --no-audit --no-fund --silent "$tarball")
# The peer dependency, at the version js/ tests against (npm ci of js/ put
# it in npm's cache; --prefer-offline fetches only what is missing).
ai_version=$(node -p 'require(process.argv[1]).version' "$JS/node_modules/ai/package.json")
(cd "$app" && npm install --prefer-offline --no-audit --no-fund --silent "ai@$ai_version")

cd "$app"
"$TSC" -p tsconfig.json
node dist/app.js | tee "$tmp/app.out"
grep -qx "ts: ok" "$tmp/app.out"
node use.mjs
node ai.mjs

node_modules/.bin/engram-mcp --help >"$tmp/mcp-help.out"
grep -q "^Usage: engram-mcp" "$tmp/mcp-help.out" || { cat "$tmp/mcp-help.out" >&2; exit 1; }
set +e
node_modules/.bin/engram-mcp --store ":memory:" </dev/null >/dev/null 2>"$tmp/mcp.err"
status=$?
set -e
if [[ $status != 2 ]] || ! grep -q "npm install @modelcontextprotocol/sdk zod" "$tmp/mcp.err"; then
  echo "engram-mcp without the MCP SDK: exit $status, not 2 naming the install:" >&2
  cat "$tmp/mcp.err" >&2
  exit 1
fi
echo "engram-mcp: the bin runs; without the MCP SDK: exit 2, $(head -1 "$tmp/mcp.err")"

for resolution in nodenext bundler; do
  module=nodenext
  [[ $resolution == bundler ]] && module=esnext
  printf '{ "compilerOptions": { "target": "es2022", "module": "%s", "moduleResolution": "%s", "strict": true, "noEmit": true, "types": [] }, "files": ["wrong.ts"] }\n' \
    "$module" "$resolution" >tsconfig.wrong.json
  if "$TSC" -p tsconfig.wrong.json >"$tmp/wrong.out" 2>&1; then
    echo "wrong.ts type-checked under $resolution resolution: engram/sqlite must not export Memory" >&2
    exit 1
  fi
  grep -q "TS2305.*engram/sqlite.*Memory" "$tmp/wrong.out" || { cat "$tmp/wrong.out" >&2; exit 1; }
  echo "wrong.ts rejected ($resolution): $(grep -o 'TS2305.*' "$tmp/wrong.out")"
done
