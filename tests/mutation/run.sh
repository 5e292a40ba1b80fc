#!/usr/bin/env bash
# Mutation testing: applies each planted bug of tests/mutation/mutants.py to a scratch copy of
# the working tree (build-mutation/src), builds the targets of its suites, runs them, and prints
# which suite caught it. Not part of CI. Options: --only ID[,ID] (repeatable), --jobs N,
# --timeout S, --no-baseline, --list, --check. Exit status 0 iff every mutant was caught.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CCACHE_DIR="${CCACHE_DIR:-/work/main/.cache/ccache}"
exec /usr/bin/python3 tests/mutation/run.py "$@"
