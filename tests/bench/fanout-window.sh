#!/usr/bin/env bash
# fanout-window.sh - one service-mode fan-out run on a fresh relay and app, and what the relay did in
# it (docs/BENCHMARKS.md, "Fan-out CPU, third round"). The arguments go to signalr-loadgen, e.g.
#   tests/bench/fanout-window.sh --scenario broadcast --connections 1000 --rate 1 --count 10 \
#       --duration 10 --ramp 1000 --drain 10 --protocol legacy --legacy-hub bench --ramp-settle 3
# (Core clients: --protocol json --service-key signalr-relay-bench-service-key --service-hub bench).
# Prints the relay's CPU per delivery over the steady window. Modes (environment, one at a time):
#   STRACE=S   strace -c the relay for S seconds once deliveries flow
#   STRACET=S  strace -f -ttt the relay for S seconds from the loadgen's start (file in the work dir)
#   PERF=S     perf stat task-clock for S seconds once deliveries flow, per delivery
#   PERFI=S    perf stat -I 250 for S seconds from the loadgen's start, and /metrics beside it
#   PERFALL=S  perf record -g for S seconds from the loadgen's start (perf.data in the work dir)
#   PERFREC=S  perf record -g for S seconds once deliveries flow; prints the top DSOs and symbols
#   PERFIDLE=S for --scenario idle: perf stat (IDLESTRACE=1: strace -c) for S seconds once IDLEN
#              (1000) clients are in IDLEMETRIC (signalr_relay_legacy_sessions), then stops the run
# RELAY_BIN picks another relay build. Needs build/release and the app's Release build.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
relay="${RELAY_BIN:-$root/build/release/signalr-relay}"
loadgen="$root/build/release/tests/bench/loadgen/signalr-loadgen"
app_dll="$root/tests/service-app/bin/Release/net10.0/signalr-service-app.dll"
KEY=signalr-relay-bench-service-key
source "$root/tests/bench/service_bench.sh"
work="$(mktemp -d /tmp/fanout-window.XXXX)"
rp="$(free_port)"; ap="$(free_port)"
trap stop_pids EXIT
"$relay" --listen "127.0.0.1:$rp" --service-key $KEY --app-negotiate "bench=http://127.0.0.1:$ap/bench" ${RELAY_FLAGS:-} >"$work/relay.log" 2>&1 &
relay_pid=$!; pids+=("$relay_pid")
metric() { relay_metric "$rp" "$1"; }
wait_relay_up "$rp"
start_service_app "$app_dll" "$ap" "$rp" "$KEY" "$work/app.log"
pids+=("$!")
wait_server_connections "$rp" bench 5
curl -s -X POST "http://127.0.0.1:$ap/bench/negotiate?negotiateVersion=1" >/dev/null
# warm: a small run
"$loadgen" --url "http://127.0.0.1:$rp" --protocol json --service-key $KEY --service-hub bench --scenario broadcast --connections 20 --rate 4 --count 4 --duration 1 -q >/dev/null 2>&1
"$loadgen" --url "http://127.0.0.1:$rp" -q --watch-pid "$relay_pid" "$@" >"$work/lg.json" 2>"$work/lg.err" &
lg=$!; pids+=("$lg"); date +%s.%N > "$work/lgstart"
if [ -n "${STRACET:-}" ]; then
  timeout -s INT "$STRACET" strace -f -ttt -p "$relay_pid" -o "$work/stracet.txt" >/dev/null 2>&1 &
fi
if [ -n "${PERFIDLE:-}" ]; then
  for _ in $(seq 1 600); do [ "$(metric "${IDLEMETRIC:-signalr_relay_legacy_sessions}")" -ge "${IDLEN:-1000}" ] 2>/dev/null && break; sleep 0.2; done
  sleep 3
  if [ -n "${IDLESTRACE:-}" ]; then timeout -s INT "$PERFIDLE" strace -c -f -p "$relay_pid" -o "$work/perfstat.txt" >/dev/null 2>&1; head -20 "$work/perfstat.txt";
  else perf stat -e task-clock,context-switches -p "$relay_pid" -o "$work/perfstat.txt" -- sleep "$PERFIDLE" >/dev/null 2>&1; fi
  echo "idle window ${PERFIDLE}s: $(awk '/task-clock/ {print $1 " ms"} /context-switches/ {print $1 " cs"}' "$work/perfstat.txt" | tr '\n' ' ')"
  kill -INT $lg
fi
if [ -n "${PERFALL:-}" ]; then
  perf record -q -F 4000 -g -p "$relay_pid" -o "$work/perfall.data" -- sleep "$PERFALL" >/dev/null 2>&1 &
  perfall=$!
  ( for i in $(seq 1 $((PERFALL*4))); do echo "$(date +%s.%N | cut -c1-14) $(metric signalr_relay_service_fanout_deliveries_total)"; sleep 0.25; done ) > "$work/metrics.txt" &
fi
if [ -n "${PERFI:-}" ]; then
  perf stat -I 250 -e task-clock -p "$relay_pid" -o "$work/perfi.txt" -- sleep "$PERFI" >/dev/null 2>&1 &
  perfi=$!
  ( for i in $(seq 1 $((PERFI*4))); do echo "$(date +%s.%N | cut -c1-14) $(metric signalr_relay_service_fanout_deliveries_total) $(metric 'signalr_relay_legacy_sessions') $(metric 'signalr_relay_service_clients{hub=\"bench\"}')"; sleep 0.25; done ) > "$work/metrics.txt" &
  perfi_metrics=$!
fi
if [ -n "${STRACE:-}" ]; then
  for _ in $(seq 1 600); do [ "$(metric signalr_relay_service_fanout_deliveries_total)" -gt 100 ] 2>/dev/null && break; sleep 0.2; done
  timeout -s INT "${STRACE}" strace -c -f -p "$relay_pid" -o "$work/strace.txt" >/dev/null 2>&1
  d0=$(metric signalr_relay_service_fanout_deliveries_total)
  echo "strace window ${STRACE}s"; head -25 "$work/strace.txt"
fi
if [ -n "${PERF:-}" ]; then
  for _ in $(seq 1 600); do [ "$(metric signalr_relay_service_fanout_deliveries_total)" -gt 100 ] 2>/dev/null && break; sleep 0.2; done
  d0=$(metric signalr_relay_service_fanout_deliveries_total)
  perf stat -e task-clock,context-switches -p "$relay_pid" -o "$work/perfstat.txt" -- sleep "$PERF" >/dev/null 2>&1
  d1=$(metric signalr_relay_service_fanout_deliveries_total)
  ms=$(awk '/task-clock/ {gsub(",","",$1); print $1}' "$work/perfstat.txt")
  cs=$(awk '/context-switches/ {gsub(",","",$1); print $1}' "$work/perfstat.txt")
  python3 -c "d=$d1-$d0; print(f'perf window ${PERF}s: {d:.0f} deliveries, task-clock $ms ms = {$ms*1000/max(d,1):.2f} us/delivery, {$cs} ctx switches')"
fi
if [ -n "${PERFREC:-}" ]; then
  for _ in $(seq 1 600); do [ "$(metric signalr_relay_service_fanout_deliveries_total)" -gt 100 ] 2>/dev/null && break; sleep 0.2; done
  perf record -q -F 2000 -g -p "$relay_pid" -o "$work/perf.data" -- sleep "$PERFREC" >/dev/null 2>&1
  perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | grep '%' | head -8
  perf report -i "$work/perf.data" --no-children -g none --sort sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -${PERFTOP:-30}
fi
wait "$lg"
python3 - "$work/lg.json" "$relay_pid" <<'PY'
import json,sys
s=json.load(open(sys.argv[1]))
w=[x for x in s["watch"] if x["pid"]==int(sys.argv[2])][0]
b=s.get("broadcast",{})
print(f"delivered {b.get('delivered')} recv {s['messages']['received']} relay steady cpu {w['cpu_s_steady']:.3f}s = {w['cpu_us_per_msg']} us/delivery; phases {s.get('phases_s')}")
PY
[ -n "${PERFALL:-}" ] && wait $perfall
[ -n "${PERFI:-}" ] && { wait "$perfi" "$perfi_metrics"; grep -v '^#' "$work/perfi.txt" | awk '{print $1, $2}' | paste - - - - ; echo; cat "$work/metrics.txt" | awk '{print $2, $3, $4}' | paste -d'|' - - - - ; }
echo "work $work"
