# Step runner shared by scripts/test and its per-part scripts
# (scripts/test-component, scripts/test-js). Source it; do not run it.
#
#   source "$(dirname "$0")/steps.sh"
#   step "rust: unit and behaviour tests" cargo test
#   step "js: node tests" my_function arg...
#   steps_finish            # last line of the script
#
# `step NAME COMMAND...` runs COMMAND (a program or a shell function) in a
# subshell with `set -euo pipefail`, so a failing command inside a function
# fails the step; the run goes on with the next step. Each result is appended
# to the file $ENGRAM_TEST_RESULTS ("pass|fail<TAB>seconds<TAB>name"), which
# scripts/test exports to the part scripts it runs, so their steps count in
# its summary. A script that sources this file with no results file yet owns
# the run: `steps_finish` then prints the summary.
#
# `steps_finish` returns non-zero when a step of this script failed.

if [[ -z "${ENGRAM_TEST_RESULTS:-}" ]]; then
  ENGRAM_TEST_RESULTS=$(mktemp "${TMPDIR:-/tmp}/engram-test.XXXXXX")
  export ENGRAM_TEST_RESULTS
  ENGRAM_TEST_OWNER=$$
fi
ENGRAM_STEPS_AT_START=$(wc -l <"$ENGRAM_TEST_RESULTS")
ENGRAM_RUN_STARTED=$SECONDS

# step NAME COMMAND... : runs one step and records its result.
step() {
  local name=$1
  shift
  local started=$SECONDS rc=0
  printf '\n==> %s\n' "$name"
  set +e
  (
    set -euo pipefail
    "$@"
  )
  rc=$?
  set -e
  local took=$((SECONDS - started))
  if [[ $rc -eq 0 ]]; then
    printf 'pass\t%s\t%s\n' "$took" "$name" >>"$ENGRAM_TEST_RESULTS"
    printf -- '--- ok: %s (%ss)\n' "$name" "$took"
  else
    printf 'fail\t%s\t%s\n' "$took" "$name" >>"$ENGRAM_TEST_RESULTS"
    printf -- '--- FAILED: %s (exit %s, %ss)\n' "$name" "$rc" "$took"
  fi
  return 0
}

# skip NAME REASON : records nothing, says why a step did not run.
skip() {
  printf '\n==> %s\n--- skipped: %s\n' "$1" "$2"
}

# run_part SCRIPT : runs an optional per-part test script when it exists and
# is executable. Its steps land in the shared results file; a script that
# fails without a failed step of its own counts as one failed step.
run_part() {
  local script=$1
  if [[ ! -e "$script" ]]; then
    skip "$script" "not present yet"
    return 0
  fi
  if [[ ! -x "$script" ]]; then
    skip "$script" "present but not executable (chmod +x it to run it)"
    return 0
  fi
  local before fails_before rc=0
  before=$(wc -l <"$ENGRAM_TEST_RESULTS")
  fails_before=$(grep -c '^fail' "$ENGRAM_TEST_RESULTS" || true)
  printf '\n==> %s\n' "$script"
  set +e
  "$script"
  rc=$?
  set -e
  local after fails_after
  after=$(wc -l <"$ENGRAM_TEST_RESULTS")
  fails_after=$(grep -c '^fail' "$ENGRAM_TEST_RESULTS" || true)
  if [[ $rc -ne 0 && $fails_after -eq $fails_before ]]; then
    printf 'fail\t0\t%s (exit %s)\n' "$script" "$rc" >>"$ENGRAM_TEST_RESULTS"
    printf -- '--- FAILED: %s (exit %s)\n' "$script" "$rc"
  elif [[ $rc -eq 0 && $after -eq $before ]]; then
    printf 'pass\t0\t%s\n' "$script" >>"$ENGRAM_TEST_RESULTS"
    printf -- '--- ok: %s\n' "$script"
  fi
  return 0
}

# last_step_passed : whether the step recorded last passed.
last_step_passed() {
  tail -n 1 "$ENGRAM_TEST_RESULTS" | grep '^pass' >/dev/null
}

# steps_failed : whether any step recorded so far failed (exit 0 if one did).
steps_failed() {
  grep -q '^fail' "$ENGRAM_TEST_RESULTS"
}

# steps_finish : the owner prints the summary; returns 1 if any step failed
# (for a part script: any of its own steps).
steps_finish() {
  local rc=0
  if [[ "${ENGRAM_TEST_OWNER:-}" == "$$" ]]; then
    local passed failed
    passed=$(grep -c '^pass' "$ENGRAM_TEST_RESULTS" || true)
    failed=$(grep -c '^fail' "$ENGRAM_TEST_RESULTS" || true)
    printf '\n==> summary (%ss in all)\n' "$((SECONDS - ENGRAM_RUN_STARTED))"
    while IFS=$'\t' read -r result took name; do
      printf '  %-4s %5ss  %s\n' "$result" "$took" "$name"
    done <"$ENGRAM_TEST_RESULTS"
    rm -f "$ENGRAM_TEST_RESULTS"
    printf 'summary: %s passed, %s failed\n' "$passed" "$failed"
    [[ $failed -eq 0 ]] || rc=1
  else
    # grep reads all its input (no -q): no SIGPIPE for tail under pipefail.
    if tail -n "+$((ENGRAM_STEPS_AT_START + 1))" "$ENGRAM_TEST_RESULTS" | grep '^fail' >/dev/null; then
      rc=1
    fi
  fi
  return $rc
}
