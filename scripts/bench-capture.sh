#!/usr/bin/env bash
# bench-capture.sh - what --capture costs the traffic it records: closed-loop Echo through two
# release relays in front of the same test backend, one without --capture and one recording
# every connection (--capture into a temporary directory, bodies kept), measured in the same
# run, alternately, ROUNDS times each. Prints one line per run and the relay's CPU per message
# (signalr-loadgen --watch-pid: CPU during steady + drain / echoes), throughput and latency.
#
#   scripts/bench-capture.sh                     10 and 100 connections, 10 s a run, 2 rounds
#   CONNECTIONS="1 100" DURATION=20 ROUNDS=3 PROTOCOL=messagepack scripts/bench-capture.sh
#
# Needs build/release (signalr-relay, signalr-loadgen; built here if missing) and dotnet.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
source scripts/lib/backend.sh

connections="${CONNECTIONS:-10 100}"
duration="${DURATION:-10}"
rounds="${ROUNDS:-2}"
protocol="${PROTOCOL:-json}"
build="$root/build/release"
work="$(mktemp -d "${TMPDIR:-/tmp}/signalr-bench-capture.XXXXXX")"
off_pid= on_pid=
cleanup() {
    for p in $off_pid $on_pid; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    backend_stop
    rm -rf "$work/capture"
}
trap cleanup EXIT

if [ ! -x "$build/signalr-relay" ] || [ ! -x "$build/tests/bench/loadgen/signalr-loadgen" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
        cmake --build "$build" --target signalr-relay signalr-loadgen -j2 >/dev/null || exit 1
fi
backend_build && backend_start >/dev/null || exit 1
mkdir -p "$work/capture"

start_relay() { # PORT ARGS... ; prints the pid
    "$build/signalr-relay" --listen "127.0.0.1:$1" --hub "chat=$BACKEND_URL/chat" "${@:2}" >"$work/relay-$1.log" 2>&1 &
    echo $!
}
off_port="$(backend_free_port)"; on_port="$(backend_free_port)"
off_pid="$(start_relay "$off_port")"
on_pid="$(start_relay "$on_port" --capture "$work/capture")"
for port in "$off_port" "$on_port"; do
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
done

printf '%-12s %6s %5s %10s %8s %8s %14s\n' capture clients round echoes/s "p50 us" "p99 us" "relay CPU/msg"
results="$work/results.txt"
for n in $connections; do
    for round in $(seq 1 "$rounds"); do
        for mode in off on; do
            port=$off_port pid=$off_pid
            [ "$mode" = on ] && port=$on_port pid=$on_pid
            "$build/tests/bench/loadgen/signalr-loadgen" --url "http://127.0.0.1:$port/chat" --protocol "$protocol" \
                --connections "$n" --duration "$duration" --watch-pid "$pid" 2>/dev/null >"$work/run.json" || true
            python3 - "$work/run.json" "$mode" "$n" "$round" <<'PY' | tee -a "$results"
import json, sys
d = json.load(open(sys.argv[1]))
w = d["watch"][0]
print("%-12s %6s %5s %10.0f %8d %8d %11.1f us" % (sys.argv[2], sys.argv[3], sys.argv[4], d["throughput_msgs_s"],
      d["latency_us"]["p50"], d["latency_us"]["p99"], w["cpu_us_per_msg"]))
PY
        done
    done
done
echo "captured: $(ls "$work/capture" | wc -l) files, $(du -sh "$work/capture" | cut -f1) (protocol $protocol, ${duration} s runs)"
python3 - "$results" <<'PY'
import sys, collections
cpu = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    cpu[(f[1], f[0])].append(float(f[6]))
for (n, mode) in sorted(cpu, key=lambda k: (int(k[0]), k[1])):
    v = cpu[(n, mode)]
    print("mean relay CPU/msg, %s clients, capture %-3s: %.1f us (%d runs)" % (n, mode, sum(v) / len(v), len(v)))
PY
