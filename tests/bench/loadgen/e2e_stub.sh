#!/usr/bin/env bash
# e2e_stub.sh LOADGEN - runs signalr-loadgen end to end against stub_server.py (Core JSON and
# legacy) and checks its JSON summaries: every connection opened, every call answered, every
# connection closed gracefully, exit status 0. A ctest; needs python3. ~15 s.
set -uo pipefail
loadgen=$1
here=$(cd "$(dirname "$0")" && pwd)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
python3 "$here/stub_server.py" --port "$port" --procs 1 --seconds 120 &
stub=$!
trap 'kill "$stub" 2>/dev/null; wait "$stub" 2>/dev/null' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null && break
  sleep 0.1
done

passed=0
failed=0
# check NAME PYTHON-CONDITION LOADGEN-ARGS...: the condition sees the summary as `d`.
check() {
  local name=$1 cond=$2
  shift 2
  local out code
  out=$("$loadgen" --url "http://127.0.0.1:$port" --settle 0 --max-time 60 -q "$@")
  code=$?
  if [ "$code" -eq 0 ] && printf '%s' "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($cond) else 1)"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name (exit $code)"; printf '%s\n' "$out"
  fi
}

all_open='d["connections"]["established"] == d["connections"]["requested"] == d["connections"]["closed"]'
answered='d["messages"]["sent"] > 0 and d["messages"]["sent"] == d["messages"]["received"] == d["latency_us"]["count"]'

check "json echo closed loop" "$all_open and $answered" --path /chat --connections 20 --duration 1
check "json echo fixed rate" "$all_open and $answered and d['sched_lag_us']['count'] == d['messages']['sent']" \
  --path /chat --connections 10 --rate 20 --duration 1
check "json echo --count" "$all_open and d['messages']['sent'] == 10 * 5" --path /chat --connections 10 --count 5 --duration 1
check "json idle, skip negotiate" "$all_open and d['messages']['sent'] == 0" --path /chat --connections 30 \
  --scenario idle --skip-negotiate --duration 0.5
check "json churn" "$all_open and d['churn']['opened'] >= 10 and d['churn']['closed'] == d['churn']['opened']" \
  --path /chat --connections 5 --scenario churn --rate 20 --duration 1
check "json echo, 2 processes, 2 sources" "$all_open and $answered and d['processes'] == 2" \
  --path /chat --connections 10 --procs 2 --sources 2 --duration 1
check "json echo after --ramp-settle" "$all_open and $answered and d['phases_s']['ramp_settle'] >= 1" \
    --path /chat --connections 10 --duration 1 --ramp-settle 1
check "legacy echo (token with + / =)" "$all_open and $answered" --protocol legacy --connections 10 --duration 1

echo "e2e_stub: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
