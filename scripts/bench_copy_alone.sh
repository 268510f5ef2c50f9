#!/bin/sh
# The budget's own cost to a copy (docs/cache-budget.md): `tar cf` of one large file to a file
# and `sync` of the archive, alone in a memory cgroup, stock against `--cache-budget BUDGET`
# with each library given, alternated, RUNS times each. Prints, per run: mode, seconds (the
# copy and its sync), tar's CPU seconds (user + system); then medians, and each mode's exact
# system call counts of one more run (perf's syscall tracepoints).
#
# Usage: [LIBRARIES="name=path/libprefetch.so ..."]
#        scripts/bench_copy_alone.sh READDIR WRITEDIR [LIMIT=256M] [BUDGET=16M] [RUNS=5]
#   READDIR holds src.bin (the copy's source; for the emulated disk give the mount point and
#   set BACKING to its backing directory, whose copy is evicted too). LIBRARIES defaults to
#   this tree's target/release/libprefetch.so as `budget`. Needs root (cgroup v1 memory
#   controller at /sys/fs/cgroup/memory, or v2), vmtouch, and perf for the counts.
set -eu
dir=$1; out=$2; limit=${3:-256M}; budget=${4:-16M}; runs=${5:-5}
here=$(cd "$(dirname "$0")" && pwd)
libraries=${LIBRARIES:-budget=$here/../target/release/libprefetch.so}
. "$here/bench_common.sh"
memory_cgroup copy-alone-bench "$limit"
results=$(mktemp)
trap 'rmdir "$group"; rm -f "$results" "$out/archive.tar"' EXIT
ingroup() { sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$group" "$@"; }
library() {  # the path of mode $1, none for stock
    for pair in $libraries; do
        if [ "${pair%%=*}" = "$1" ]; then echo "${pair#*=}"; fi
    done
}
copy() {  # MODE [wrapper...]: one copy, cold source
    mode=$1; shift
    vmtouch -qe "$dir/src.bin" ${BACKING:+"$BACKING/src.bin"}
    rm -f "$out/archive.tar"
    preload=$(library "$mode")
    ingroup env ${preload:+LD_PRELOAD="$preload" LIBPREFETCH_CACHE_BUDGET="$budget"} \
        "$@" tar cf "$out/archive.tar" -C "$dir" src.bin
    sync "$out/archive.tar"
}
modes="stock $(for pair in $libraries; do printf '%s ' "${pair%%=*}"; done)"
echo "mode seconds cpu-seconds"
for run in $(seq "$runs"); do
    for mode in $modes; do
        start=$(date +%s.%N)
        cpu=$(copy "$mode" /usr/bin/time -f '%U %S' 2>&1 | tail -1 | awk '{print $1 + $2}')
        end=$(date +%s.%N)
        echo "$mode $(echo "$end - $start" | bc) $cpu" | tee -a "$results"
    done
done
echo "| mode | seconds | cpu seconds |"
echo "|---|---:|---:|"
for mode in $modes; do
    echo "| $mode | $(awk -v m="$mode" '$1 == m {print $2}' "$results" | median) |" \
        "$(awk -v m="$mode" '$1 == m {print $3}' "$results" | median) |"
done
command -v perf > /dev/null || exit 0
events=""
for call in read write lseek newfstatat cachestat fadvise64 sync_file_range; do
    events="$events${events:+,}syscalls:sys_enter_$call"
done
for mode in $modes; do
    copy "$mode" perf stat -x, -e "$events" -o "$results.perf" --
    echo "$mode $(grep sys_enter "$results.perf" |
        awk -F, '{sub("syscalls:sys_enter_", "", $3); printf "%s=%s ", $3, $1}')"
done
rm -f "$results.perf"
