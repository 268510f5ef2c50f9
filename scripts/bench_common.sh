# Sourced by the cache-budget benchmarks (bench_cache_budget.sh, bench_copy_alone.sh,
# bench_copy_beside.sh).
#
# memory_cgroup NAME LIMIT makes a memory cgroup of LIMIT bytes (cgroup v1's memory controller
# at /sys/fs/cgroup/memory, or v2) named NAME-PID and sets $group to its directory. Needs root.
memory_cgroup() {
    if [ -d /sys/fs/cgroup/memory ]; then
        group=/sys/fs/cgroup/memory/$1-$$
        mkdir "$group"; echo "$2" > "$group/memory.limit_in_bytes"
    else
        group=/sys/fs/cgroup/$1-$$
        mkdir "$group"; echo "$2" > "$group/memory.max"
    fi
}

# median: the middle of the numbers on standard input, one a line (the lower of the two middles
# for an even count).
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
