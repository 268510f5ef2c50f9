#!/usr/bin/env bash
# Captures every output of `prefetch sim --json` (every shipped trace, every policy, several
# devices and both time models) and of every `prefetch repro` into one directory, so that two
# builds can be compared byte for byte:
#
#   scripts/sim_outputs.sh BINARY OUTDIR [TRACE_DIR [REPO]]   # capture
#   diff -r OLD_OUTDIR NEW_OUTDIR                         # compare
#
# A refactor of the simulator keeps every file identical unless it names the fix that changes
# one. TRACE_DIR defaults to the repository's traces/. The repro outputs land in OUTDIR/repro;
# the section `prefetch repro` rewrites in docs/repro.md of REPO, the repository the binary
# was built from (default: two levels above the binary's directory), is copied to
# OUTDIR/repro/PAPER.repro.md (restore the doc with git afterwards).
set -euo pipefail
bin=$1
out=$2
traces=${3:-$(dirname "$0")/../traces}
mkdir -p "$out"
# cp and cpem have no depth on a fixed-time device: give one there (the disk models' own
# depth is used on them).
policies="lru,lru-demand,opt-demand,lru-obl,opt-obl,lru-sensible,lru-throttled,aggressive,conservative,fifo,clock,dulo,linux-readahead,ap,cp:depth=512K,cpem:depth=512K,reorder,libprefetch,libprefetch-window,libprefetch-aggressive,libprefetch-conservative"
disk_policies=${policies//:depth=512K/}
run() { # name, args...
    local name=$1
    shift
    if "$bin" sim "$@" --jobs 1 --json >"$out/$name.json" 2>"$out/$name.err"; then
        echo 0 >"$out/$name.rc"
    else
        echo $? >"$out/$name.rc"
    fi
}
for trace in "$traces"/*.gz "$traces"/*.zst; do
    t=$(basename "$trace")
    run "$t.unit" --trace "$trace" --cache 64,1024 --device unit:10 --policy "$policies"
    run "$t.realistic" --trace "$trace" --cache 64,1024 --device unit:100 --realistic --policy "$policies"
    run "$t.disk" --trace "$trace" --cache 64,1024 --device st3500320as,ssd:100,8,500:fifo --policy "$disk_policies"
    run "$t.optimal" --trace "$trace" --cache 8 --device unit:10 --policy optimal
done
# Cao's policies with two fetches in flight, and a spread of fetch times.
run depth2 --trace "$traces/cpp.trace.gz" --cache 64 --fetch-time 4,16 --depth 2 --policy all
run spread --trace "$traces/cs.trace.gz" --cache 64 --fetch-time 16 --fetch-spread 4 --policy all
run mrc --trace "$traces/gli.trace.gz" --cache 64,256,1024 --mrc
# Every reproduction.
root=${4:-$(cd "$(dirname "$bin")/../.." && pwd)}
for paper in cao dulo libprefetch competitive; do
    "$bin" repro "$paper" --traces "$traces" --out "$out/repro/$paper" >"$out/repro.$paper.txt" 2>&1 || echo "rc $?" >>"$out/repro.$paper.txt"
    sed -i "s#$out##g; s#$root##g" "$out/repro.$paper.txt"
    cp "$root/docs/repro.md" "$out/repro/$paper.repro.md"
done
