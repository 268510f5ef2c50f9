#!/bin/sh
# The copy-beside-a-service benchmark of docs/cache-budget.md: a backup (`tar cf` of one large
# file) runs beside a service reading random 4 KiB pages of its working set (scripts/service.c),
# both in one memory cgroup. Modes, alternated, RUNS times each:
#   alone      the service without the copy (for as long as the stock copy took last)
#   stock      the copy as it is (the kernel's LRU)
#   budget     the copy under `prefetch run --cache-budget BUDGET` (dulo)
#   writeback  the same with `--cache-writeback`: the archive's pages the budget lets go are
#              written back at once and dropped once clean
#   apart      the copy as it is, the service outside the cgroup (its pages charged elsewhere, so
#              the copy never evicts them): the copy beside a service that never misses, the
#              control for what the service's own CPU costs the copy
#   dropclose  the copy, then its source and archive dropped at the end (`vmtouch -e`), as the
#              `nocache` preload does at close()
# Prints, per run: mode, the copy's seconds, the service's reads/s, misses (reads that found
# their page not cached), p50 and p99 latency, and the budget's page counts; then medians.
#
# Usage: [MODES="stock alone budget writeback apart dropclose"] [COPY=tar|cp]
#        scripts/bench_copy_beside.sh READDIR WRITEDIR [LIMIT=256M] [BUDGET=16M] [RUNS=3]
#   READDIR holds ws.bin (the working set) and src.bin (the copy's source); for the emulated
#   disk give the mount point (its backing directory must hold them). The archive goes to
#   WRITEDIR (on this machine's disk), is synced (timed with the copy) and deleted after each
#   run; with WRITEDIR `-` it is streamed through a pipe to `cat > /dev/null` instead, as a
#   backup sent to another machine.
#   COPY=cp copies src.bin to WRITEDIR with `cp` (coreutils 9: `copy_file_range`) instead.
#   Needs root (cgroup v1 memory controller at /sys/fs/cgroup/memory, or v2) and vmtouch.
set -eu
dir=$1; out=$2; limit=${3:-256M}; budget=${4:-16M}; runs=${5:-3}
modes=${MODES:-stock alone budget writeback dropclose}; tool=${COPY:-tar}
here=$(cd "$(dirname "$0")" && pwd)
prefetch=${PREFETCH:-$here/../target/release/prefetch}
bin=$(mktemp -d /tmp/copy-beside-bench-XXXXXX)
cc -O2 -o "$bin/service" "$here/service.c"
. "$here/bench_common.sh"
memory_cgroup copy-beside-bench "$limit"
service=
trap '[ -z "$service" ] || kill "$service" 2>/dev/null; wait; rmdir "$group"; rm -rf "$bin"' EXIT
ingroup() { sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$group" "$@"; }
archive=$out/archive.tar
[ "$out" = - ] && archive=
copy() {  # the copy, with what to run it under in front
    if [ -z "$archive" ]; then
        ingroup "$@" sh -c 'tar cf - -C "$0" src.bin | cat > /dev/null' "$dir"
    elif [ "$tool" = cp ]; then
        ingroup "$@" cp "$dir/src.bin" "$archive"
    else
        ingroup "$@" tar cf "$archive" -C "$dir" src.bin
    fi
    # the copy is done when its archive is on disk (else a stock copy deleted within the
    # kernel's 30 s writes nothing, where one whose writeback was started writes it all)
    [ -z "$archive" ] || sync "$archive"
}
budgeted() {  # the copy under the budget, with more options of `prefetch run` in front
    LIBPREFETCH_CACHE_BUDGET_REPORT=1 copy "$prefetch" run --cache-budget "$budget" "$@" -- \
        2> "$bin/budget.err"
    # one line per process under the library (a shell, tar): tar's reads the most
    pages=$(grep -o '[0-9]* pages read, [0-9]* missed, [0-9]* dropped.*' "$bin/budget.err" |
        sort -n | tail -1 | awk '{print $1 "r/" $4 "m/" $6 "d/" $10 "w/" $12 "dirty"}')
}
echo 10 > "$bin/alone_for"  # seconds; each stock run sets it (one runs in a subshell)
one() {  # one run: MODE
    mode=$1
    vmtouch -qe "$dir/ws.bin" "$dir/src.bin"
    # started directly (not through a function, which would fork a subshell): $! is the
    # service once the shell execs it
    where=$group
    [ "$mode" = apart ] && where=$(dirname "$group")
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$where" "$bin/service" "$dir/ws.bin" \
        > "$bin/service.out" &
    service=$!
    until grep -q ready "$bin/service.out"; do sleep 0.1; done
    start=$(date +%s.%N)
    pages=-
    case $mode in
    alone) sleep "$(cat "$bin/alone_for")" ;;
    stock|apart|dropclose) copy ;;
    budget) budgeted ;;
    writeback) budgeted --cache-writeback ;;
    esac
    [ "$mode" = dropclose ] && vmtouch -qe "$dir/src.bin" $archive
    end=$(date +%s.%N)
    kill -TERM "$service"; wait "$service"; service=
    seconds=$(echo "$end - $start" | bc)
    [ "$mode" = stock ] && echo "$seconds" > "$bin/alone_for"
    [ -z "$archive" ] || rm -f "$archive"
    echo "$mode $seconds $(tail -1 "$bin/service.out" |
        awk '{print $8, $4, $10, $12}') $pages"
}
results=$(mktemp)
echo "mode copy-s service-reads/s service-misses p50-us p99-us budget-pages(read/missed/dropped/written/left-dirty)"
for run in $(seq "$runs"); do
    for mode in $modes; do
        one "$mode" | tee -a "$results"
    done
done
echo "| mode | copy (s) | service reads/s | service misses | p50 (us) | p99 (us) |"
echo "|---|---:|---:|---:|---:|---:|"
for mode in $modes; do
    row="| $mode"
    for col in 2 3 4 5 6; do
        row="$row | $(awk -v m="$mode" -v c="$col" '$1 == m {print $c}' "$results" | median)"
    done
    echo "$row |"
done
rm "$results"
