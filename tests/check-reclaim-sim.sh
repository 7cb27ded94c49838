#!/usr/bin/env bash
# reclaim-sim --quick: it exits 0 (it returns 1 when a run leaves driver allocations behind, and
# names the pool), and its table has a row for every workload and pool. The numbers are its own.
#   check-reclaim-sim.sh PATH/TO/reclaim-sim
set -u
out=$("$1" --quick 2>&1)
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
if grep -q "left after the runs" <<<"$out"; then
    echo "FAIL a pool left driver allocations behind"
    failed=1
fi
[ "$failed" -eq 0 ] && echo "ok   every workload and pool, nothing left behind" || echo "$out"
exit $failed
