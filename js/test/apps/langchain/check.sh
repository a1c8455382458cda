#!/usr/bin/env bash
# engram/langchain under the real langchain createAgent, as an app gets it:
# a scratch app (target/js-apps/langchain) with langchain and @langchain/core
# pinned in the package-lock.json beside this file (npm ci only when the
# lockfile changed), then run.test.mjs from there against this working
# tree's js/ (ENGRAM_JS).
# Usage: js/test/apps/langchain/check.sh [oldest] (after scripts/build-js); the
# steps are js/test/apps/scratch-app.sh's.
exec "$(dirname "${BASH_SOURCE[0]}")/../scratch-app.sh" langchain "$@"
