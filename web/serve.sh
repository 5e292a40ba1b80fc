#!/bin/sh
# Serves web/, the wasm builds and the demos' models with the COOP/COEP headers that the pthreads
# build needs (web/serve.mjs says what goes where). Usage: web/serve.sh [--port N] [--no-isolation]
# [--host H] [--models DIR]; the default port is 8080.
set -e
command -v node >/dev/null 2>&1 || { echo "serve.sh: needs node (apt-get install nodejs)" >&2; exit 1; }
exec node "$(dirname "$0")/serve.mjs" "$@"
