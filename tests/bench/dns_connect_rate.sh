#!/usr/bin/env bash
# dns_connect_rate.sh - new connections per second through signalr-relay when its backend is a
# host name that only DNS knows, with that DNS answering at once and after DELAY_MS.
#
#   sudo tests/bench/dns_connect_rate.sh LABEL=RELAY_BIN [LABEL=RELAY_BIN...]
#
# Runs inside its own mount namespace (unshare -m, so root, or a user namespace with
# `unshare -rm` where allowed), where /etc/resolv.conf is a file of its own pointing at
# tests/resolver/dns_server.py on 127.0.0.1:53 and /etc/nsswitch.conf says "hosts: dns": the
# system resolver (glibc's getaddrinfo, which libwebsockets calls inside its connect) and
# c-ares both ask that server; the machine's own files are not touched. For each relay binary
# and each DNS delay (0 ms and DELAY_MS, default 100), starts the test backend once, the DNS
# server, the relay (--hub chat=http://backend.test:PORT/chat), and signalr-loadgen opening
# CONNECTIONS (default 300) Core clients (negotiate + WebSocket, the relay makes a backend
# negotiate and a backend WebSocket for each) at up to 2000/s, and prints the rate it reached.
# Needs a release build of the relay(s) and of signalr-loadgen (build/release), the test
# backend built (tests/backend), python3.
set -euo pipefail
if [ "${DNS_BENCH_INSIDE:-}" != 1 ]; then
    exec unshare -m env DNS_BENCH_INSIDE=1 "$0" "$@"
fi
cd "$(dirname "$0")/../.."
root=$(pwd)
source scripts/lib/backend.sh
LOADGEN="${LOADGEN:-$root/build/release/tests/bench/loadgen/signalr-loadgen}"
DELAY_MS="${DELAY_MS:-100}"
CONNECTIONS="${CONNECTIONS:-300}"
work=$(mktemp -d "${TMPDIR:-/tmp}/dns-bench.XXXXXX")
printf 'nameserver 127.0.0.1\noptions timeout:5 attempts:1\n' >"$work/resolv.conf"
printf 'hosts: dns\n' >"$work/nsswitch.conf"
mount --make-rprivate / 2>/dev/null || true
mount --bind "$work/resolv.conf" /etc/resolv.conf
mount --bind "$work/nsswitch.conf" /etc/nsswitch.conf

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; BACKEND_PID=${BACKEND_PID:-} backend_stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
backend_start >/dev/null
echo "backend $BACKEND_URL; $CONNECTIONS connections per run; DNS delays 0 and $DELAY_MS ms"

for arg in "$@"; do
    label=${arg%%=*} bin=${arg#*=}
    for delay in 0 "$DELAY_MS"; do
        python3 tests/resolver/dns_server.py --port 53 --port-file "$work/dns.port" --parent $$ \
            --zone "{\"backend.test\": {\"a\": [\"127.0.0.1\"], \"ttl\": 300, \"delay_ms\": $delay}}" >/dev/null &
        dns=$!
        while [ ! -s "$work/dns.port" ]; do sleep 0.1; done
        rm -f "$work/dns.port"
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        "$bin" --listen "127.0.0.1:$port" --hub "chat=http://backend.test:$BACKEND_PORT/chat" --log-level warn \
            2>"$work/relay.log" &
        relay=$!
        pids=("$dns" "$relay")
        until curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"; do sleep 0.1; done
        rate=$("$LOADGEN" --url "http://127.0.0.1:$port/chat" --scenario idle --connections "$CONNECTIONS" \
            --ramp 2000 --max-pending 64 --duration 0 --settle 0 --connect-timeout 60 -q |
            python3 -c 'import json, sys; d = json.load(sys.stdin); c = d["connections"]; print("%.0f conn/s (%d opened, %d failed)" % (d["connect_rate_s"], c["established"], c["failed"]))')
        echo "$label, DNS delay ${delay} ms: $rate"
        kill "$relay" "$dns"; wait "$relay" "$dns" 2>/dev/null || true
    done
done
