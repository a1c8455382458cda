#!/usr/bin/env bash
# The probe of scripts/check-types: a copy of the crate whose Rust record
# changes (Fact's `said_at` renamed in its JSON, `#[serde(rename)]`) while
# the committed declarations do not must fail the check, with a diff naming
# both names; once js/types/records.d.ts is regenerated in the copy, the
# Python host's TypedDicts, unchanged, must fail it, naming the field. The
# copy builds in the shared debug target (only the engram crate recompiles).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
COPY=$(mktemp -d)
trap 'rm -rf "$COPY"' EXIT

mkdir -p "$COPY/tests" "$COPY/scripts" "$COPY/js/types" "$COPY/hosts/python/engram_host"
cp -R "$ROOT/src" "$COPY/"
cp "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" "$ROOT/README.md" "$COPY/"
cp "$ROOT/tests/types_generated.rs" "$COPY/tests/"
cp "$ROOT/scripts/check-types" "$ROOT/scripts/check_py_records.py" "$COPY/scripts/"
cp "$ROOT/js/types/records.d.ts" "$COPY/js/types/"
cp "$ROOT/hosts/python/engram_host/records.py" "$COPY/hosts/python/engram_host/"

fail() {
  echo "probe: $*" >&2
  exit 1
}

# The unchanged copy passes: the probe's failures below are the change's.
"$COPY/scripts/check-types" >/dev/null || fail "the unchanged copy fails the check"

python3 - "$COPY/src/types/fact.rs" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = "    /// When it was said: the time of the source episode's last message.\n    pub said_at: i64,\n"
assert s.count(old) == 1, "Fact's said_at is not where the probe expects it"
s = s.replace(old, old.replace("    pub said_at", '    #[serde(rename = "spoken_at")]\n    pub said_at'))
open(p, "w").write(s)
PY

if "$COPY/scripts/check-types" >"$COPY/out.txt" 2>&1; then
  fail "check-types passed with Fact.said_at renamed in Rust alone"
fi
grep -q '^-  said_at: number,' "$COPY/out.txt" || fail "the diff does not name said_at: $(cat "$COPY/out.txt")"
grep -q '^+  spoken_at: number,' "$COPY/out.txt" || fail "the diff does not name spoken_at: $(cat "$COPY/out.txt")"
echo "probe: a Rust field renamed alone fails the d.ts check, its diff naming it"

"$COPY/scripts/check-types" --write >/dev/null
if "$COPY/scripts/check-types" >"$COPY/out.txt" 2>&1; then
  fail "check-types passed with records.py behind the regenerated declarations"
fi
grep -q "Fact: no field 'spoken_at'" "$COPY/out.txt" || fail "the Python check does not name spoken_at: $(cat "$COPY/out.txt")"
grep -q "Fact: field 'said_at' is not in the Rust record" "$COPY/out.txt" ||
  fail "the Python check does not name said_at: $(cat "$COPY/out.txt")"
echo "probe: the same field behind in records.py fails the Python check, naming it"
