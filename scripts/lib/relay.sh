# Bash functions to start and stop signalr-relay in front of the test backend. Source this file;
# nothing runs on load. Needs BACKEND_URL (scripts/lib/backend.sh) before relay_start.
#
#   relay_start [extra flags...]  free 127.0.0.1 port, hubs chat/status/secure -> the backend, and
#                                 ChatHub/StatusHub/SecureHub -> /chat, /status, /secure for the legacy
#                                 clients' proxies (the backend's class names: legacy pushes carry them as H),
#                                 waits for /metrics; exports RELAY_PORT, RELAY_PID, RELAY_URL, RELAY_LOG
#   relay_stop                    SIGTERM, wait, and fail (return 1, log printed) if the relay
#                                 exited non-zero, e.g. a sanitizer report; safe to call twice
#   relay_build_asan              configures build/asan (ASan+UBSan) when needed and builds the relay
RELAY_ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RELAY_BIN="${RELAY_BIN:-}"

relay_build_asan() {
    local dir="$RELAY_ROOT_DIR/build/asan"
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        cmake -S "$RELAY_ROOT_DIR" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null ||
            { echo "relay: cmake (ASan build) failed" >&2; return 1; }
    fi
    nice cmake --build "$dir" -j2 --target signalr-relay >/dev/null || { echo "relay: the ASan build failed" >&2; return 1; }
}

relay_pick_binary() {
    if [ -z "$RELAY_BIN" ]; then
        for candidate in "$RELAY_ROOT_DIR/build/asan/signalr-relay" "$RELAY_ROOT_DIR/build/release/signalr-relay"; do
            [ -x "$candidate" ] && RELAY_BIN="$candidate" && break
        done
    fi
    [ -x "$RELAY_BIN" ] || { echo "relay: no signalr-relay binary (build first)" >&2; return 1; }
}

relay_start() {
    relay_pick_binary || return 1
    : "${BACKEND_URL:?relay_start needs BACKEND_URL (start the backend first)}"
    local log_dir
    log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-relay.XXXXXX")"
    RELAY_LOG="$log_dir/relay.log"
    RELAY_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
    RELAY_URL="http://127.0.0.1:$RELAY_PORT"
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        "$RELAY_BIN" --listen "127.0.0.1:$RELAY_PORT" \
        --hub "chat=$BACKEND_URL/chat" --hub "status=$BACKEND_URL/status" --hub "secure=$BACKEND_URL/secure" \
        --hub "ChatHub=$BACKEND_URL/chat" --hub "StatusHub=$BACKEND_URL/status" --hub "SecureHub=$BACKEND_URL/secure" \
        --hub-methods "StatusHub=Echo,GetStatus,WhoAmI" \
        "$@" >"$RELAY_LOG" 2>&1 </dev/null &
    RELAY_PID=$!
    export RELAY_PORT RELAY_PID RELAY_URL RELAY_LOG
    local waited=0
    while ! curl -sf -o /dev/null --max-time 2 "$RELAY_URL/metrics"; do
        if ! kill -0 "$RELAY_PID" 2>/dev/null; then
            echo "relay exited during start; log:" >&2; cat "$RELAY_LOG" >&2; RELAY_PID=; return 1
        fi
        sleep 0.2; waited=$((waited + 1))
        [ "$waited" -gt 100 ] && { echo "relay did not answer within 20 s" >&2; relay_stop; return 1; }
    done
    echo "relay listening on $RELAY_URL (pid $RELAY_PID, $(basename "$(dirname "$RELAY_BIN")") build, log $RELAY_LOG)"
}

relay_stop() {
    [ -n "${RELAY_PID:-}" ] || return 0
    local pid=$RELAY_PID status=0
    RELAY_PID=
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || status=$?
    if [ "$status" -ne 0 ]; then
        echo "relay exited with status $status; log follows" >&2
        tail -100 "$RELAY_LOG" >&2
        return 1
    fi
    if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$RELAY_LOG"; then
        echo "relay log has a sanitizer report:" >&2; grep -A30 -E "Sanitizer|runtime error" "$RELAY_LOG" | head -60 >&2
        return 1
    fi
    return 0
}
