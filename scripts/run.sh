#!/usr/bin/env bash
# run.sh - builds signalr-relay and runs it.
#
#   scripts/run.sh                      no arguments: also builds and starts the sample ASP.NET Core
#                                       backend from tests/backend on a free loopback port, puts the
#                                       relay in front of it on 127.0.0.1:8080 (RELAY_PORT to change),
#                                       serves the chat demo of demo/ at /demo/ (its libraries
#                                       installed there with npm ci), prints the URLs to use, and
#                                       stops both on Ctrl-C
#   scripts/run.sh --hub chat=http://127.0.0.1:5000/chat [...]
#   scripts/run.sh --config relay.json  with arguments: the relay alone, against your backends
#                                       (see scripts/run.sh --help for every flag)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh >&2
cmake -S "$root" -B "$root/build/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build/release" -j"$(nproc 2>/dev/null || echo 2)" --target signalr-relay >/dev/null
relay="$root/build/release/signalr-relay"

if [ $# -gt 0 ]; then
  exec "$relay" "$@"
fi

source scripts/lib/backend.sh
source scripts/lib/suite.sh
# The demo page's libraries (jQuery, the jQuery SignalR client, @microsoft/signalr), pinned in
# demo/package.json; without them the relay still runs, /demo then lacks its scripts.
suite_npm_ci "$root/demo" >&2 || echo "npm ci in demo/ failed: the /demo page will not work" >&2
echo "building the sample backend (tests/backend)..." >&2
backend_build
backend_start >&2
trap backend_stop EXIT
port=${RELAY_PORT:-8080}
cat >&2 <<TXT

signalr-relay on http://127.0.0.1:$port in front of the sample backend ($BACKEND_URL):
  ASP.NET Core SignalR clients:  http://127.0.0.1:$port/chat   (also /status, /secure)
  legacy ASP.NET SignalR 2.x:    http://127.0.0.1:$port/signalr (hub proxies chatHub, statusHub)
  metrics:                       http://127.0.0.1:$port/metrics
  demo, both kinds of client in one chat:  http://127.0.0.1:$port/demo/
Ctrl-C stops the relay and the backend.

TXT
"$relay" --listen "127.0.0.1:$port" --hub "chat=$BACKEND_URL/chat" --hub "status=$BACKEND_URL/status" \
  --hub "secure=$BACKEND_URL/secure" --hub "ChatHub=$BACKEND_URL/chat" --hub "StatusHub=$BACKEND_URL/status" \
  --demo-dir "$root/demo" &
relay_pid=$!
trap 'kill -TERM $relay_pid 2>/dev/null; wait $relay_pid 2>/dev/null; backend_stop' EXIT
trap 'exit 0' INT TERM
wait $relay_pid
