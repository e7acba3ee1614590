# Bash functions to build, start and stop the test backend (tests/backend, a stock ASP.NET Core
# SignalR server). Source this file; nothing runs on load.
#
#   backend_build            dotnet build -c Release (quiet); once per scripts/test.sh run
#                            (scripts/lib/built_once.sh)
#   backend_start            free 127.0.0.1 port, start in background, wait for /health;
#                            exports BACKEND_PORT, BACKEND_PID, BACKEND_URL, BACKEND_LOG
#   backend_stop             kill it and wait; safe to call twice (use in `trap ... EXIT`)
#
# BACKEND_LOG_REQUESTS=1 (exported before backend_start) makes the backend log one line per HTTP
# request (method, URL, selected headers) to $BACKEND_LOG.

source "$(dirname "${BASH_SOURCE[0]}")/built_once.sh"

BACKEND_SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../tests/backend" && pwd)"
BACKEND_BIN_DIR="$BACKEND_SRC_DIR/bin/Release/net10.0"
BACKEND_START_TIMEOUT="${BACKEND_START_TIMEOUT:-60}"

export DOTNET_NOLOGO=1
export DOTNET_CLI_TELEMETRY_OPTOUT=1
export DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

backend_build() {
    local out
    built_once_done "$BACKEND_SRC_DIR" && return 0
    if ! out="$(dotnet build "$BACKEND_SRC_DIR" -c Release --nologo -v quiet 2>&1)"; then
        printf '%s\n' "$out" >&2
        echo "backend build failed" >&2
        return 1
    fi
    built_once_mark "$BACKEND_SRC_DIR"
}

# Asks the kernel for a free port by binding port 0, then releases it. A small race with other
# processes remains; backend_start notices a failed bind because /health never answers.
backend_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

backend_start() {
    if [ -n "${BACKEND_PID:-}" ] && kill -0 "$BACKEND_PID" 2>/dev/null; then
        echo "backend already running (pid $BACKEND_PID, port $BACKEND_PORT)" >&2
        return 0
    fi
    if [ ! -f "$BACKEND_BIN_DIR/signalr-test-backend.dll" ]; then
        echo "backend not built: run backend_build first" >&2
        return 1
    fi

    local log_dir
    log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-backend.XXXXXX")"
    BACKEND_LOG="$log_dir/backend.log"
    BACKEND_PORT="$(backend_free_port)"
    BACKEND_URL="http://127.0.0.1:$BACKEND_PORT"

    ASPNETCORE_ENVIRONMENT=Production \
        Logging__LogLevel__Default=Warning \
        dotnet "$BACKEND_BIN_DIR/signalr-test-backend.dll" --urls "$BACKEND_URL" \
        >"$BACKEND_LOG" 2>&1 </dev/null &
    BACKEND_PID=$!
    export BACKEND_PORT BACKEND_PID BACKEND_URL BACKEND_LOG

    local waited=0
    while ! curl -sf -o /dev/null --max-time 2 "$BACKEND_URL/health"; do
        if ! kill -0 "$BACKEND_PID" 2>/dev/null; then
            echo "backend exited during start-up; log $BACKEND_LOG:" >&2
            tail -n 30 "$BACKEND_LOG" >&2
            BACKEND_PID=""
            return 1
        fi
        if [ "$waited" -ge $((BACKEND_START_TIMEOUT * 10)) ]; then
            echo "backend did not answer /health within ${BACKEND_START_TIMEOUT}s; log $BACKEND_LOG" >&2
            backend_stop
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    echo "backend listening on $BACKEND_URL (pid $BACKEND_PID, log $BACKEND_LOG)"
}

backend_stop() {
    local pid="${BACKEND_PID:-}"
    BACKEND_PID=""
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        # Graceful shutdown takes up to 5 s for open connections; escalate after 10 s.
        local i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null || true
    return 0
}
