#!/usr/bin/env bash
# soak.sh - a long mixed load against an ASan+UBSan signalr-relay, then checks that it leaked
# nothing: no sanitizer report, RSS flat after warm-up, descriptors and gauges back to baseline.
#
#   scripts/soak.sh                 30 minutes (the issue 10 note)
#   scripts/soak.sh --minutes 15    another length
#   scripts/soak.sh --quick         2 minutes, a CI-like smoke run
#   scripts/soak.sh --interval 5    sample every 5 s instead of 10
#   RELAY_BIN=/path/signalr-relay scripts/soak.sh   another relay build (default build/asan, built
#                                   here if missing); LOADGEN=/path/signalr-loadgen likewise
#                                   (default build/release, built if missing)
#
# Starts the test backend (tests/backend) and the relay on free 127.0.0.1 ports (scripts/lib/),
# then runs this mix at once for the whole time, each part its own process at `nice -n 10`:
#   echo-json      signalr-loadgen, 200 Core JSON clients, Echo at 1 call/s each
#   echo-msgpack   signalr-loadgen, 200 Core MessagePack clients, Echo at 1 call/s each
#   echo-legacy    signalr-loadgen, 200 legacy (ASP.NET SignalR 2.x) clients, Echo at 1 call/s each
#   idle           signalr-loadgen, 1500 idle Core clients (JSON and MessagePack), pinging every 15 s
#   broadcast      signalr-loadgen, 300 Core clients listening, one Broadcast round per second
#                  (every /chat client gets it, the slow readers below too)
#   churn-json     signalr-loadgen, 100 held + 20 connect/close cycles per second (Core JSON)
#   churn-legacy   signalr-loadgen, 50 held + 5 cycles per second (legacy)
#   rough          tests/soak/rough-clients.mjs: 30 Core slow readers (stop reading while the hub
#                  pushes ~12 MiB at them, then read again, drop TCP, or close unread) and 40 legacy
#                  clients that drop their WebSocket and /reconnect, then /abort or vanish
# About 2,700 clients at a time (~5,400 relay descriptors), spread over 9 processes.
#
# Every --interval seconds (default 10) it samples the relay: RSS, open descriptors
# (/proc/PID/fd), CPU, and the /metrics gauges, into samples.csv (one row per sample) beside
# soak.log and each load process's output in build/soak/<UTC date-time>/ (build/soak/latest).
# When the load has stopped it waits (at most 150 s: the legacy disconnect
# timeout is 30 s) for the gauges to return to their pre-load values, then checks:
#   - every load process exited 0 (no failed connections or calls, nothing unexpected)
#   - sessions_active, backend_links_active, legacy_sessions_active, negotiations_pending and
#     timers_armed back to their pre-load values
#   - open descriptors back to the pre-load count, +-3
#   - RSS flat after warm-up: the samples taken under load (start of the ramps to the end of the
#     traffic, not the closing) are split in thirds, the first third being warm-up; the last
#     third's mean RSS must be within 10 % + 2 MiB of the middle third's
#   - the relay exits 0 on SIGTERM, with no AddressSanitizer/LeakSanitizer/UBSan report in its log
# Prints a summary table and `soak: N passed, N failed`; exit status 0 only when nothing failed.
# Always stops what it started (trap). Not part of scripts/test.sh (too long).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

minutes=30
interval=10
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --minutes) minutes=$2; shift 2 ;;
        --quick) minutes=2; shift ;;
        --interval) interval=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "soak: unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
done
case $minutes in ''|*[!0-9.]*) echo "soak: --minutes needs a number" >&2; exit 1 ;; esac
case $interval in ''|*[!0-9]*|0) echo "soak: --interval needs a whole number of seconds" >&2; exit 1 ;; esac
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
[ "$seconds" -ge 30 ] || { echo "soak: at least half a minute" >&2; exit 1; }

source scripts/lib/backend.sh
source scripts/lib/relay.sh

# One directory per run (build/soak/YYYYmmdd-HHMMSS), build/soak/latest points at the newest.
out="$root/build/soak/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
ln -sfn "$(basename "$out")" "$root/build/soak/latest"
log="$out/soak.log"
: >"$log"
say() { echo "[soak $(date -u +%H:%M:%S)] $*" | tee -a "$log"; }

NICE="nice -n 10"
LOAD_PIDS=()
SAMPLER_PID=
cleanup() {
    local p
    [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null && wait "$SAMPLER_PID" 2>/dev/null
    SAMPLER_PID=
    for p in "${LOAD_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    LOAD_PIDS=()
    if [ -n "${RELAY_PID:-}" ]; then
        RELAY_PID_SAVED=$RELAY_PID
        relay_stop >>"$log" 2>&1 || RELAY_STOP_FAILED=1
    fi
    backend_stop
}
RELAY_STOP_FAILED=0
RELAY_PID_SAVED=
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# --- build what is missing ------------------------------------------------------------------------
if [ -z "${RELAY_BIN:-}" ]; then
    RELAY_BIN="$root/build/asan/signalr-relay"
    if [ ! -x "$RELAY_BIN" ]; then
        say "building the ASan+UBSan relay (build/asan)"
        { [ -f build/asan/CMakeCache.txt ] || $NICE cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null; } &&
            $NICE cmake --build build/asan -j2 --target signalr-relay >/dev/null || { echo "soak: relay build failed" >&2; exit 1; }
    fi
fi
export RELAY_BIN
LOADGEN="${LOADGEN:-$root/build/release/tests/bench/loadgen/signalr-loadgen}"
if [ ! -x "$LOADGEN" ]; then
    say "building signalr-loadgen (build/release)"
    { [ -f build/release/CMakeCache.txt ] || $NICE cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; } &&
        $NICE cmake --build build/release -j2 --target signalr-loadgen >/dev/null || { echo "soak: loadgen build failed" >&2; exit 1; }
fi
if [ ! -d tests/relay/node_modules/ws ]; then
    (cd tests/relay && timeout 600 npm ci --no-audit --no-fund --loglevel=error) || { echo "soak: npm ci (tests/relay) failed" >&2; exit 1; }
fi
[ -f "$BACKEND_BIN_DIR/signalr-test-backend.dll" ] || $NICE bash -c 'source scripts/lib/backend.sh; backend_build' || exit 1

# --- start ----------------------------------------------------------------------------------------
# relay-tests.sh's sanitizer settings: a 16 MB quarantine of freed memory (ASan's default, 256 MB,
# would read as RSS growth for the first minutes) and a non-zero exit on any report.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23:quarantine_size_mb=16}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
backend_start >>"$log" || { echo "soak: backend did not start" >&2; exit 1; }
relay_start >>"$log" || { echo "soak: relay did not start" >&2; exit 1; }
say "relay $RELAY_BIN pid $RELAY_PID at $RELAY_URL (log $RELAY_LOG), backend pid $BACKEND_PID; ${minutes} min of load"

metrics() { curl -sf --max-time 5 "$RELAY_URL/metrics"; }
gauge() { sed -n "s/^signalr_relay_$1 //p" <<<"$2"; }
fds() { ls "/proc/$RELAY_PID/fd" 2>/dev/null | wc -l; }
GAUGES="sessions_active backend_links_active legacy_sessions_active negotiations_pending timers_armed"

# Baseline: the relay after start, before any client (a warm-up request each way first, so the
# first /metrics and the lws listener are not counted as growth).
sleep 1
m0=$(metrics)
fd0=$(fds)
declare -A base
for g in $GAUGES; do base[$g]=$(gauge "$g" "$m0"); done
rss0=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$RELAY_PID/status")
say "baseline: fds $fd0, rss $((rss0 / 1024)) MiB, $(for g in $GAUGES; do printf '%s=%s ' "$g" "${base[$g]}"; done)"

# --- sampler --------------------------------------------------------------------------------------
ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
sample_row() { # PHASE
    local m rss cpu stat rest
    m=$(metrics) || m=""
    rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$RELAY_PID/status" 2>/dev/null)
    stat=$(cat "/proc/$RELAY_PID/stat" 2>/dev/null)
    rest=${stat##*) }
    cpu=$(awk -v t="$ticks" '{ printf "%.2f", ($12 + $13) / t }' <<<"$rest")
    printf '%d,%s,%s,%s,%s' "$((SECONDS - t_start))" "$1" "$rss" "$(fds)" "$cpu"
    for g in $GAUGES messages_to_clients_total flow_control_pauses_total sessions_opened_total; do
        printf ',%s' "$(gauge "$g" "$m")"
    done
    printf '\n'
}
t_start=$SECONDS
echo "t_s,phase,rss_kb,fds,cpu_s,$(tr ' ' ',' <<<"$GAUGES"),messages_to_clients_total,flow_control_pauses_total,sessions_opened_total" >"$out/samples.csv"
sample_row baseline >>"$out/samples.csv"
phase_file="$out/.phase"
echo load >"$phase_file"
(
    # Phase "load" while every part runs its traffic, "closing" after `seconds` (the clients close),
    # "settle" once every load process has exited.
    while sleep "$interval"; do
        phase=$(cat "$phase_file")
        [ "$phase" = load ] && [ $((SECONDS - t_start)) -ge "$seconds" ] && phase=closing
        sample_row "$phase" >>"$out/samples.csv"
    done
) &
SAMPLER_PID=$!

# --- the load -------------------------------------------------------------------------------------
# Ramps take a few seconds; every part runs `seconds` of steady traffic, then closes its clients.
lg() { # NAME ARGS...
    local name=$1; shift
    $NICE "$LOADGEN" --url "$RELAY_URL" -q --ramp 200 --duration "$seconds" --drain 30 --settle 0 \
        --max-time $((seconds + 180)) "$@" >"$out/$name.json" 2>"$out/$name.err" &
    LOAD_PIDS+=($!)
    LOAD_NAMES+=("$name")
    echo "  $name: signalr-loadgen $*" >>"$log"
}
LOAD_NAMES=()
lg echo-json --protocol json --scenario echo --connections 200 --rate 1
lg echo-msgpack --protocol messagepack --scenario echo --connections 200 --rate 1
lg echo-legacy --protocol legacy --scenario echo --connections 200 --rate 1
lg idle-json --protocol json --scenario idle --connections 750
lg idle-msgpack --protocol messagepack --scenario idle --connections 750
lg broadcast --protocol json --scenario broadcast --connections 300 --rate 1
lg churn-json --protocol json --scenario churn --connections 100 --rate 20
lg churn-legacy --protocol legacy --scenario churn --connections 50 --rate 5
$NICE node tests/soak/rough-clients.mjs --url "$RELAY_URL" --seconds "$seconds" --slow 30 --legacy 40 \
    >"$out/rough.json" 2>"$out/rough.err" &
LOAD_PIDS+=($!)
LOAD_NAMES+=(rough)
say "load started: ${LOAD_NAMES[*]}"

declare -A load_status
for i in "${!LOAD_PIDS[@]}"; do
    wait "${LOAD_PIDS[$i]}"
    load_status[${LOAD_NAMES[$i]}]=$?
done
LOAD_PIDS=()
echo settle >"$phase_file"
say "load finished after $((SECONDS - t_start)) s; waiting for the gauges to return to baseline"

# --- settle: gauges back to baseline --------------------------------------------------------------
settle_limit=150
settled=0
for _ in $(seq 1 "$settle_limit"); do
    m=$(metrics) || m=""
    ok=1
    for g in $GAUGES; do [ "$(gauge "$g" "$m")" = "${base[$g]}" ] || ok=0; done
    if [ "$ok" = 1 ]; then settled=1; break; fi
    sleep 1
done
sleep 2 # closes still in flight in the kernel
t_settle=$((SECONDS - t_start))
sample_row final >>"$out/samples.csv"
kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null; SAMPLER_PID=
m1=$(metrics)
fd1=$(fds)
say "settled: $([ "$settled" = 1 ] && echo "gauges at baseline" || echo "gauges NOT at baseline after ${settle_limit} s") at t=${t_settle} s; fds $fd1"

# --- stop the relay (sanitizer report, leak check) ------------------------------------------------
relay_log=$RELAY_LOG
relay_stop >>"$log" 2>&1; relay_stop_status=$?
backend_stop

# --- checks ---------------------------------------------------------------------------------------
passed=0 failed=0
rows=()
check() { # NAME OK DETAIL
    if [ "$2" = 1 ]; then passed=$((passed + 1)); rows+=("$(printf '%-6s %-34s %s' ok "$1" "$3")")
    else failed=$((failed + 1)); rows+=("$(printf '%-6s %-34s %s' FAILED "$1" "$3")"); fi
}

for name in "${LOAD_NAMES[@]}"; do
    st=${load_status[$name]}
    if [ "$name" = rough ]; then
        detail=$(tail -n 1 "$out/rough.json" 2>/dev/null)
    else
        detail=$(python3 - "$out/$name.json" <<'EOF' 2>/dev/null
import json, sys
s = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
c, m = s["connections"], s["messages"]
extra = ""
if "churn" in s: extra = f", churn cycles {s['churn'].get('closed', 0)}"
print(f"conns {c['established']}/{c['requested']} failed {c['failed']} server-closed {c['closed_by_server']}, "
      f"msgs sent {m['sent']} recv {m['received']} errors {m['errors']}{extra}"
      + (f"; first error: {s['first_error']}" if s.get("first_error") else ""))
EOF
)
    fi
    check "load $name exit 0" "$([ "$st" = 0 ] && echo 1 || echo 0)" "exit $st: ${detail:-no summary (see $out/$name.err)}"
done

for g in $GAUGES; do
    v=$(gauge "$g" "$m1")
    check "$g back to baseline" "$([ "$v" = "${base[$g]}" ] && echo 1 || echo 0)" "before ${base[$g]}, after ${v:-?}"
done
check "descriptors back to baseline (+-3)" "$([ $((fd1 - fd0)) -le 3 ] && [ $((fd0 - fd1)) -le 3 ] && echo 1 || echo 0)" "before $fd0, after $fd1"

# RSS flat after warm-up: samples of phase "load" in thirds; last third's mean vs the middle third's.
rss_line=$(awk -F, 'NR > 1 && $2 == "load" && $3 != "" { v[n++] = $3 }
    END {
        if (n < 6) { print "0 too few samples under load (" n ")"; exit }
        a = int(n / 3); b = int(2 * n / 3)
        for (i = a; i < b; i++) { mid += v[i] } mid /= (b - a)
        for (i = b; i < n; i++) { last += v[i]; if (v[i] > peak) peak = v[i] } last /= (n - b)
        for (i = 0; i < a; i++) if (v[i] > peak) peak = v[i]
        for (i = a; i < b; i++) if (v[i] > peak) peak = v[i]
        limit = mid * 1.10 + 2048
        printf "%d middle third %.1f MiB, last third %.1f MiB (limit %.1f), first sample %.1f, peak %.1f MiB, %d samples\n",
            last <= limit, mid / 1024, last / 1024, limit / 1024, v[0] / 1024, peak / 1024, n
    }' "$out/samples.csv")
check "RSS flat after warm-up" "${rss_line%% *}" "${rss_line#* }"
rss_end=$(awk -F, '$2 == "final" { print $3 }' "$out/samples.csv")
check "relay exit 0 on SIGTERM" "$([ "$relay_stop_status" = 0 ] && echo 1 || echo 0)" \
    "relay_stop status $relay_stop_status (log $relay_log)"
reports=$(grep -cE "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer" "$relay_log")
check "no sanitizer report in the relay log" "$([ "$reports" = 0 ] && echo 1 || echo 0)" "$reports report lines"

cpu=$(awk -F, 'NR > 1 && $2 == "load" { if (!t0) { t0 = $1; c0 = $5 } t1 = $1; c1 = $5 } END { if (t1 > t0) printf "%.0f", 100 * (c1 - c0) / (t1 - t0) }' "$out/samples.csv")
{
    echo
    echo "== soak summary: ${minutes} min of load, samples in $out/samples.csv, relay log $relay_log"
    echo "relay: RSS $((rss0 / 1024)) MiB at start, $(( ${rss_end:-0} / 1024 )) MiB after the load; CPU under load ${cpu:-?} % of one core"
    echo "peak: $(awk -F, 'NR > 1 { if ($6 + 0 > s) s = $6; if ($7 + 0 > l) l = $7; if ($8 + 0 > g) g = $8; if ($4 + 0 > f) f = $4 } END { printf "sessions %d, backend links %d, legacy sessions %d, descriptors %d", s, l, g, f }' "$out/samples.csv")"
    echo "relay log: $(grep -c ' warn ' "$relay_log") warn, $(grep -c ' error ' "$relay_log") error lines (not checked; see the log)"
    printf '%s\n' "${rows[@]}"
    echo "soak: $passed passed, $failed failed"
} | tee -a "$log"
[ "$failed" -eq 0 ]
