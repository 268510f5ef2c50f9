#!/bin/bash
# Where a command's wall time went, from the scheduler's counters of its threads
# (/proc/PID/task/*/schedstat, sampled every 10 ms until it exits): on a processor, runnable but
# waiting for one, and neither (asleep: the device, a lock, a timer). Written for the benchmark
# passes of libprefetch (ATC 2009, section 5; the strided pass of 5.3), which on a shared machine
# can be slower than stock without waiting longer on the device; compare passes run side by side.
#
# Usage: scripts/sched_split.sh COMMAND...
#   e.g. scripts/sched_split.sh prefetch bench strided --runs 1 --modes libprefetch --no-progress
# Threads that exit between two samples are missed (the library's advice thread lives for the
# first rounds only): their time is counted as asleep.
set -u
[ $# -gt 0 ] || { sed -n '2,11p' "$0"; exit 2; }
start=$(date +%s.%N)
"$@" &
pid=$!
last=""
while kill -0 "$pid" 2>/dev/null; do
    sample=$(cat /proc/"$pid"/task/*/schedstat 2>/dev/null | awk '{c += $1; w += $2} END {print c, w}')
    [ -n "$sample" ] && [ "$sample" != " " ] && last=$sample
    sleep 0.01
done
wait "$pid"
status=$?
end=$(date +%s.%N)
[ -n "$last" ] || { echo "sched_split: no sample of the command's threads" >&2; exit 1; }
echo "$last" | awk -v wall="$(echo "$end - $start" | bc)" '{
    printf "wall %.2f s: on a processor %.2f, runnable %.2f, asleep %.2f\n",
        wall, $1 / 1e9, $2 / 1e9, wall - $1 / 1e9 - $2 / 1e9 }' >&2
exit $status
