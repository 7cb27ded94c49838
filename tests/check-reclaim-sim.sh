#!/usr/bin/env bash
# reclaim-sim on 64 seeds, the seed's regime: it exits 0 (1 where a run leaves driver allocations
# behind, or where the legacy or plain pool asks the driver, refuses or, in batches, synchronizes
# more often than the ggml-style pool beyond the seeds' noise), its table has a row for every
# workload and pool, and its verdict a line for each count it holds them to.
#   check-reclaim-sim.sh PATH/TO/reclaim-sim
set -u
SEEDS=64
out=$("$1" --seeds "$SEEDS" 2>&1)
rc=$?
failed=0
if [ "$rc" -ne 0 ]; then
    echo "FAIL exit $rc"
    failed=1
fi
for workload in cotenant batches mixed; do
    for pool in legacy plain ggml-style; do
        if [ "$(grep -cE "^$workload +$pool +[0-9]" <<<"$out")" -ne 1 ]; then
            echo "FAIL no row for $workload / $pool"
            failed=1
        fi
    done
done
# driver allocations and OUT_OF_MEMORY in 3 workloads, synchronizes in batches, for legacy and plain
verdicts=$(grep -cE "a run beside ggml-style .*: no more$" <<<"$out")
if [ "$verdicts" -ne 14 ]; then
    echo "FAIL $verdicts verdicts of no more, where 14 are due:"
    grep -E "a run beside ggml-style" <<<"$out"
    failed=1
fi
if grep -q "left after the runs" <<<"$out"; then
    echo "FAIL a pool left driver allocations behind"
    failed=1
fi
[ "$failed" -eq 0 ] && echo "ok   every workload and pool at $SEEDS seeds, the seed's regime holds, nothing left behind" ||
    echo "$out"
exit $failed
