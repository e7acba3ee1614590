#!/usr/bin/env bash
# run.sh - builds the service app, starts probe.mjs (the fake service) and the app against it,
# plays the demo scenario (fake clients), optionally watches the idle traffic, then stops the app
# with SIGTERM and records its shutdown. Everything on 127.0.0.1; both processes always stopped.
#
# Usage: probe/run.sh [LOGFILE] ; environment:
#   PROBE_PORT (5390)  APP_PORT (5391)  ACCESS_KEY (probe-secret)  OBSERVE_S (0)
#   PROBE_ARGS (extra probe flags, e.g. "--no-finack --frames --hex")  APP_ARGS (extra app args,
#   e.g. "--ServiceApp:ServerConnections=3")  SCENARIO (demo | listen: no fake clients)
#   LISTEN_S (for SCENARIO=listen: seconds to wait before stopping the app, default 15)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app_dir=$(dirname "$here")
log=${1:-/tmp/service-probe.log}
probe_port=${PROBE_PORT:-5390}
app_port=${APP_PORT:-5391}
key=${ACCESS_KEY:-probe-secret}
scenario=${SCENARIO:-demo}
dll="$app_dir/bin/Release/net10.0/signalr-service-app.dll"

if [ ! -f "$dll" ] || [ -n "$(find "$app_dir" -name '*.cs' -newer "$dll" -not -path '*/obj/*' | head -1)" ]; then
  echo "building the app..."
  nice dotnet build -c Release "$app_dir/ServiceApp.csproj" >/dev/null || { echo "build failed"; exit 1; }
fi

probe_pid= app_pid=
cleanup() {
  [ -n "$app_pid" ] && kill -TERM "$app_pid" 2>/dev/null
  [ -n "$probe_pid" ] && kill -TERM "$probe_pid" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

scenario_args=(--scenario "$scenario")
[ "$scenario" = demo ] && scenario_args+=(--app "http://127.0.0.1:$app_port" --observe-s "${OBSERVE_S:-0}")
# Both the probe and this script append to the log (a plain > would let the probe overwrite
# the lines written here).
: >"$log"
# shellcheck disable=SC2086
node "$here/probe.mjs" --port "$probe_port" --key "$key" "${scenario_args[@]}" ${PROBE_ARGS:-} >>"$log" 2>&1 &
probe_pid=$!
sleep 0.5

# shellcheck disable=SC2086
Azure__SignalR__ConnectionString="Endpoint=http://127.0.0.1;Port=$probe_port;AccessKey=$key;Version=1.0;" \
  nice dotnet "$dll" --urls "http://127.0.0.1:$app_port" ${APP_ARGS:-} >"$log.app" 2>&1 &
app_pid=$!

if [ "$scenario" = demo ]; then
  want="SCENARIO (DONE|FAILED)"; [ "${OBSERVE_S:-0}" != 0 ] && want="OBSERVE DONE|SCENARIO FAILED"
  for _ in $(seq 1 $((120 + ${OBSERVE_S:-0}))); do
    grep -qE "$want" "$log" && break
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 1
  done
else
  sleep "${LISTEN_S:-15}"
fi

echo "+++ SIGTERM to the app" >>"$log"
start=$(date +%s.%N)
kill -TERM "$app_pid"
wait "$app_pid"; status=$?
app_pid=
awk -v s="$start" -v e="$(date +%s.%N)" -v st="$status" 'BEGIN { printf "+++ app exited with %s after %.2f s\n", st, e - s }' >>"$log"
sleep 0.5
kill -TERM "$probe_pid"; wait "$probe_pid" 2>/dev/null; probe_pid=
grep -E "SCENARIO|FAILED|\+\+\+" "$log"
echo "probe log: $log   app log: $log.app"
