#!/usr/bin/env bash
# Builds (if needed) and runs the real ASP.NET SignalR 2.4.1 server on Mono in the foreground:
#   tests/legacy-ref/run.sh PORT [--detailed-errors] [--try-websockets] [--trace]
# prints "legacy-ref listening on http://127.0.0.1:PORT/signalr ..." when it accepts requests;
# runs until SIGTERM/SIGINT (the mono process replaces this shell: kill the PID you started).
# Start it in the background from a test script and always stop it, e.g.
#   tests/legacy-ref/run.sh "$port" >"$log" 2>&1 & pid=$!; trap 'kill $pid; wait $pid' EXIT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 PORT [--detailed-errors] [--try-websockets] [--trace]" >&2
    exit 2
fi
port="$1"; shift
"$here/build.sh"
exec mono --debug "$here/bin/LegacyRef.exe" --host 127.0.0.1 --port "$port" "$@"
