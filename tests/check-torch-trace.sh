#!/usr/bin/env bash
# torch_bench's training run, recorded under legacy on an H100 (docs/traces), replayed on the sim
# driver at the H100's capacity: legacy and plain hold at peak what the GPU's legacy pool held (the
# sim replays the run), and vmm no more than PyTorch's own allocator held in the same run.
#   check-torch-trace.sh PATH/TO/pool-replay PATH/TO/trace.xz
set -u
NATIVE_PEAK_MIB=2908.0 # torch.cuda.max_memory_reserved, native, the H100 run the trace came from
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
xz -dc "$2" >"$trace" || { echo "FAIL cannot read $2"; exit 1; }
out=$("$1" "$trace" --configs recorded,legacy,plain,vmm --capacity 81080 2>&1) || { echo "FAIL pool-replay: $out"; exit 1; }
# the peak reserved column of a configuration's row
peak() { awk -v c="$1" '$1 == c { print $7 }' <<<"$out"; }
recorded=$(peak recorded)
failed=0
for kind in legacy plain; do
    if [ "$(peak $kind)" != "$recorded" ]; then
        echo "FAIL $kind holds $(peak $kind) MiB at peak, the GPU's legacy pool $recorded"
        failed=1
    fi
done
if ! awk -v v="$(peak vmm)" -v n="$NATIVE_PEAK_MIB" 'BEGIN { exit !(v != "" && v <= n) }'; then
    echo "FAIL vmm holds $(peak vmm) MiB at peak, more than native's $NATIVE_PEAK_MIB"
    failed=1
fi
[ "$failed" -eq 0 ] && echo "torch trace: legacy and plain $recorded MiB at peak as on the GPU, vmm $(peak vmm) (native $NATIVE_PEAK_MIB)"
exit "$failed"
