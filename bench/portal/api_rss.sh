#!/usr/bin/env bash
# bench/portal/api_rss.sh HTTP PID RUNS — the API side of bench/portal,
# called by bench/portal/run once its agent serves a year of hourly data:
#   - the time of the heat-map query over the year (the API's answer,
#     database work included), per metric, median and worst of RUNS,
#     and of a year's chart (8,760 points) for comparison;
#   - the agent's resident memory (VmRSS) idle with the portal on: before
#     any request, and after every page has been loaded and the heat maps
#     asked for (target: ≤ 30 MB).
# Loopback only. Prints a report; exits non-zero only if a request fails.
set -euo pipefail
http=$1 pid=$2 runs=${3:-5}

rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"; }

# Median and worst of the times (seconds) on stdin, in ms.
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "median %.1f ms, worst %.1f ms (n=%d)", 1000 * v[int((NR + 1) / 2)], 1000 * v[NR], NR }'; }

time_of() {
    for _ in $(seq "$runs"); do
        curl -sf -o /dev/null -w '%{time_total}\n' "http://$http$1"
    done | stats
}

for metric in rtt throughput pdr; do
    test=$( [ "$metric" = rtt ] && echo ping || { [ "$metric" = pdr ] && echo udp || echo tcp; } )
    printf 'heat-map API, a year of hourly %s %s: %s\n' "$test" "$metric" \
        "$(time_of "/api/v1/heatmap?metric=$metric&test=$test")"
done
since=$(( $(date +%s) - 400 * 86400 ))
printf 'chart API, a year of hourly ping RTT (8,760 points): %s\n' \
    "$(time_of "/api/v1/chart?metric=rtt&test=ping&since=$since")"
printf 'overview API (latest of each path): %s\n' "$(time_of "/api/v1/overview")"
printf 'agent idle RSS with the portal on, after the pages and queries: %s MB (target <= 30 MB)\n' "$(rss_mb)"
