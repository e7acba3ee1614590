# service_bench.sh - what the service-mode bench drivers share (sourced by fanout-window.sh and
# fanout-instructions.sh): a free port, one relay metric, and the test app of tests/service-app
# started against a relay with all its server connections up.
#   free_port                                  a free TCP port on 127.0.0.1
#   pids, stop_pids                            the processes a driver started, and their stop (the
#                                              driver sets `trap stop_pids EXIT`)
#   relay_metric PORT NAME                     the value of the first /metrics line starting with NAME
#   wait_relay_up PORT                         until the relay answers /metrics (30 s at most)
#   start_service_app DLL APP_PORT RELAY_PORT KEY LOG
#                                              the app in the background, 5 server connections per
#                                              hub ($! is its pid)
#   wait_server_connections PORT HUB N         until the relay counts N server connections of HUB
#                                              (100 s at most)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
stop_pids() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }

relay_metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v k="$2" 'index($0, k) == 1 { print $2 }'; }

wait_relay_up() {
    for _ in $(seq 1 100); do [ -n "$(relay_metric "$1" signalr_relay_)" ] && return 0; sleep 0.3; done
    return 1
}

start_service_app() {
    ASPNETCORE_ENVIRONMENT=Production DOTNET_NOLOGO=1 dotnet "$1" --urls "http://127.0.0.1:$2" \
        "--Azure:SignalR:ConnectionString=Endpoint=http://127.0.0.1;Port=$3;AccessKey=$4;Version=1.0;" \
        --ServiceApp:ServerConnections=5 --ServiceApp:SdkLogLevel=Warning >"$5" 2>&1 &
}

wait_server_connections() {
    for _ in $(seq 1 200); do
        [ "$(relay_metric "$1" "signalr_relay_service_server_connections{hub=\"$2\"}")" = "$3" ] && return 0
        sleep 0.5
    done
    return 1
}
