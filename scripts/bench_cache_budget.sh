#!/bin/sh
# The page-cache budget benchmark of docs/cache-budget.md: the alternating program
# (scripts/alternate.c: 6 x a 64 MiB sequential pass + 1,500 random 4 KiB reads of a 256 MiB
# file) in a memory cgroup, stock (the kernel's LRU) against `prefetch run --cache-budget` with
# each policy, alternated, RUNS times each; prints each run's seconds and checksum, then medians.
#
# Usage: scripts/bench_cache_budget.sh DIR [LIMIT=56M] [BUDGET=48M] [RUNS=3] [POLICIES="dulo lru"]
#   DIR holds seq.bin (64 MiB) and rand.bin (256 MiB), made if missing (for the emulated disk,
#   make them in the backing directory first and give the mount point). Needs root (cgroup v1
#   memory controller at /sys/fs/cgroup/memory, or v2). Files are made cold before each run
#   with per-file POSIX_FADV_DONTNEED.
set -eu
dir=$1; limit=${2:-56M}; budget=${3:-48M}; runs=${4:-3}; policies=${5:-dulo lru}
here=$(cd "$(dirname "$0")" && pwd)
prefetch=${PREFETCH:-$here/../target/release/prefetch}
bin=$(mktemp -d /tmp/cache-budget-bench-XXXXXX)
cc -O2 -o "$bin/alternate" "$here/alternate.c"
[ -f "$dir/seq.bin" ] || head -c 64M /dev/urandom > "$dir/seq.bin"
[ -f "$dir/rand.bin" ] || head -c 256M /dev/urandom > "$dir/rand.bin"
. "$here/bench_common.sh"
memory_cgroup cache-budget-bench "$limit"
trap 'rmdir "$group"; rm -r "$bin"' EXIT
cold() {
    python3 -c "import os, sys
for f in sys.argv[1:]:
    fd = os.open(f, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)" \
        "$dir/seq.bin" "$dir/rand.bin"
}
one() {  # one run: MODE [prefetch run options...]
    mode=$1; shift
    cold
    start=$(date +%s.%N)
    sum=$(sh -c 'echo $$ > "$0/cgroup.procs"; shift; exec "$@"' "$group" - "$@" \
        "$bin/alternate" "$dir/seq.bin" "$dir/rand.bin")
    end=$(date +%s.%N)
    echo "$mode $(echo "$end - $start" | bc) $sum"
}
results=$(mktemp)
for run in $(seq "$runs"); do
    one stock >> "$results"; tail -1 "$results"
    for policy in $policies; do
        one "$policy" "$prefetch" run --cache-budget "$budget" --cache-policy "$policy" -- \
            >> "$results"
        tail -1 "$results"
    done
done
echo "| mode | median s | stock / mode |"
echo "|---|---:|---:|"
stock=$(awk '$1 == "stock" {print $2}' "$results" | median)
for mode in stock $policies; do
    median=$(awk -v m="$mode" '$1 == m {print $2}' "$results" | median)
    echo "| $mode | $median | $(echo "scale=2; $stock / $median" | bc) |"
done
rm "$results"
