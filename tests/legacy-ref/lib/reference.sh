# Bash functions to start and stop the legacy reference server (tests/legacy-ref). Source this
# file; nothing runs on load.
#   reference_start [flags...]  builds if needed, free 127.0.0.1 port, waits until it listens;
#                               exports REFERENCE_PID, REFERENCE_URL (…/signalr), REFERENCE_LOG
#   reference_stop              SIGTERM, wait (KILL after 5 s); safe to call twice
REFERENCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

reference_start() {
    "$REFERENCE_DIR/build.sh" || return 1
    local log_dir port waited=0
    log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-legacy-ref.XXXXXX")"
    REFERENCE_LOG="$log_dir/reference.log"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
    mono --debug "$REFERENCE_DIR/bin/LegacyRef.exe" --host 127.0.0.1 --port "$port" "$@" >"$REFERENCE_LOG" 2>&1 </dev/null &
    REFERENCE_PID=$!
    REFERENCE_URL="http://127.0.0.1:$port/signalr"
    export REFERENCE_PID REFERENCE_URL REFERENCE_LOG
    until grep -q "^legacy-ref listening" "$REFERENCE_LOG" 2>/dev/null; do
        if ! kill -0 "$REFERENCE_PID" 2>/dev/null; then
            echo "legacy-ref exited during start; log:" >&2; cat "$REFERENCE_LOG" >&2; REFERENCE_PID=; return 1
        fi
        sleep 0.2; waited=$((waited + 1))
        [ "$waited" -gt 150 ] && { echo "legacy-ref did not start within 30 s" >&2; reference_stop; return 1; }
    done
    echo "legacy-ref (ASP.NET SignalR 2.4.1 on Mono) listening on $REFERENCE_URL (pid $REFERENCE_PID, log $REFERENCE_LOG)"
}

reference_stop() {
    [ -n "${REFERENCE_PID:-}" ] || return 0
    local pid=$REFERENCE_PID
    REFERENCE_PID=
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}
