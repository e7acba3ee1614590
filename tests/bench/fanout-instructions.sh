#!/usr/bin/env bash
# fanout-instructions.sh - user-space instructions per fan-out delivery of a service-mode relay,
# counted with callgrind: deterministic where CPU time on a loaded machine is not (the figures of
# docs/BENCHMARKS.md, "Fan-out to legacy recipients", before and after each change).
#
#   tests/bench/fanout-instructions.sh [legacy|json] [RECIPIENTS]     (defaults: legacy 300)
#   RELAY_BIN=/path/to/signalr-relay tests/bench/fanout-instructions.sh legacy   another build
#
# Starts the relay under valgrind --tool=callgrind with instrumentation off, the service app of
# tests/service-app (5 server connections per hub) and signalr-loadgen (RECIPIENTS clients of
# the hub `bench` that join one group; one of them sends to it 10 times a second); once sends
# are flowing, instrumentation is on for 5 s. Prints the relay's instructions in that window
# divided by the calls of the per-recipient function (legacy_session_push_text for legacy
# recipients, core_session.c's hub_message for Core ones), and that function's own inclusive
# count per call. Needs build/release (signalr-relay, signalr-loadgen) and the app's Release build.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
proto="${1:-legacy}"
n="${2:-300}"
relay="${RELAY_BIN:-$root/build/release/signalr-relay}"
loadgen="$root/build/release/tests/bench/loadgen/signalr-loadgen"
app_dll="$root/tests/service-app/bin/Release/net10.0/signalr-service-app.dll"
case "$proto" in
    legacy) who=(--protocol legacy --legacy-hub bench); fn="legacy_session_push_(text|element)" ;;  # element: before 9836b49
    json) who=(--protocol json --service-key fanout-ir-key --service-hub bench); fn="core_session.c:hub_message" ;;
    *) echo "usage: $0 [legacy|json] [RECIPIENTS]" >&2; exit 2 ;;
esac
for f in "$relay" "$loadgen" "$app_dll"; do
    [ -e "$f" ] || { echo "fanout-instructions: $f is missing (build it first)" >&2; exit 1; }
done
command -v callgrind_control >/dev/null || { echo "fanout-instructions: valgrind is not installed" >&2; exit 1; }

source "$root/tests/bench/service_bench.sh"
work="$(mktemp -d)"
rp="$(free_port)"; ap="$(free_port)"
trap stop_pids EXIT

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" "$relay" \
    --listen "127.0.0.1:$rp" --service-key fanout-ir-key --app-negotiate "bench=http://127.0.0.1:$ap/bench" \
    >"$work/relay.log" 2>&1 &
relay_pid=$!; pids+=("$relay_pid")
metric() { relay_metric "$rp" "$1"; }
wait_relay_up "$rp" || true
start_service_app "$app_dll" "$ap" "$rp" fanout-ir-key "$work/app.log"
pids+=("$!")
wait_server_connections "$rp" bench 5 || true
"$loadgen" --url "http://127.0.0.1:$rp" "${who[@]}" --scenario broadcast --group fanout-ir --connections "$n" \
    --rate 10 --count 100 --duration 10 --drain 20 --connect-timeout 60 -q >"$work/loadgen.json" 2>&1 &
lg_pid=$!; pids+=("$lg_pid")
for _ in $(seq 1 600); do
    [ "$(metric signalr_relay_service_fanout_deliveries_total)" -gt 0 ] 2>/dev/null && break; sleep 0.2
done
sleep 1
callgrind_control -i on "$relay_pid" >/dev/null 2>&1
sleep 5
callgrind_control -i off "$relay_pid" >/dev/null 2>&1
wait "$lg_pid" || true
kill "$relay_pid"; wait "$relay_pid" 2>/dev/null || true
total=$(callgrind_annotate "$work/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
line=$(callgrind_annotate --inclusive=yes --tree=caller "$work/callgrind.out" 2>/dev/null | grep -E "=> .*${fn} \(" | head -1)
calls=$(sed -E 's/.*\(([0-9,]+)x\).*/\1/' <<<"$line" | tr -d ,)
incl=$(awk '{ gsub(",", "", $1); print $1 }' <<<"$line")
[ -n "$calls" ] && [ "$calls" -gt 0 ] || { echo "fanout-instructions: no $fn calls counted (logs in $work)" >&2; exit 1; }
echo "$proto, $n recipients: $calls deliveries counted; relay $((total / calls)) instructions per delivery," \
     "$fn $((incl / calls)) (callgrind: $work/callgrind.out)"
