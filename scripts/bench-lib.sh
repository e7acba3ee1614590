# bench-lib.sh - bash functions for benchmark drivers: what a process costs, read from /proc.
# Source this file; nothing runs on load.
#
#   bench_rss_kb PID     resident memory (VmRSS of /proc/PID/status) in kB
#   bench_cpu_s PID      CPU time used so far (utime + stime of /proc/PID/stat) in seconds,
#                        with two decimals (the kernel counts in clock ticks, usually 1/100 s)
#   bench_sample PID     "RSS_KB CPU_S" on one line, both read at the same moment
#   bench_delta_s A B    B - A for two bench_cpu_s readings, two decimals
#
# Each function prints nothing and returns 1 when the process does not exist (or is not
# readable). signalr-loadgen --watch-pid PID takes the same readings itself at every phase
# boundary of a run; these functions are for the moments a driver chooses.

bench_rss_kb() {
    local pid=$1 key value unit
    [ -r "/proc/$pid/status" ] || return 1
    while read -r key value unit; do
        if [ "$key" = "VmRSS:" ]; then
            printf '%s\n' "$value"
            return 0
        fi
    done <"/proc/$pid/status"
    return 1 # a zombie or kernel thread has no VmRSS
}

bench_cpu_s() {
    local pid=$1 stat rest ticks
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    [ -n "$stat" ] || return 1
    # The command name (field 2) may hold spaces and ')' - cut after its last ')'.
    rest=${stat##*) }
    # shellcheck disable=SC2086
    set -- $rest
    # Now $1 is field 3 (state); utime is field 14 -> $12, stime field 15 -> $13.
    ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
    awk -v u="${12}" -v s="${13}" -v t="$ticks" 'BEGIN { printf "%.2f\n", (u + s) / t }'
}

bench_sample() {
    local pid=$1 rss cpu
    rss=$(bench_rss_kb "$pid") || return 1
    cpu=$(bench_cpu_s "$pid") || return 1
    printf '%s %s\n' "$rss" "$cpu"
}

bench_delta_s() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", b - a }'
}
