# Bash functions for the fixture recording scripts (scripts/capture-*-fixtures.sh). Source this
# file; nothing runs on load.
#
#   capture_all_ended DIR SECONDS   waits until every *.jsonl in DIR has its end line (the relay
#                                   writes it when the connection ends); returns 1 after SECONDS
capture_all_ended() {
    local dir="$1" tries=$(($2 * 5)) waited=0 f open
    while :; do
        open=0
        for f in "$dir"/*.jsonl; do
            [ -e "$f" ] || continue
            tail -n 1 "$f" | grep -q '"type":"end"' || open=1
        done
        [ "$open" = 0 ] && return 0
        waited=$((waited + 1))
        [ "$waited" -gt "$tries" ] && return 1
        sleep 0.2
    done
}
