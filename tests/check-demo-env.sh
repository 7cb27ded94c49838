#!/usr/bin/env bash
# pool-demo with a malformed environment value: one clear error line naming the variable, and a
# non-zero exit (not one refusal per pool, then success); with an empty one, the default, as
# unset (the options table's rule, every row).
#   check-demo-env.sh PATH/TO/pool-demo
set -u
demo=$1
failed=0
run() {
    env -u GGML_CUDA_POOL -u GGML_CUDA_NO_VMM -u GGML_CUDA_POOL_FAULT -u GGML_CUDA_POOL_LOG -u GGML_CUDA_POOL_TIMING \
        "$1" "$demo" --driver sim --layers 1 --embd 64 --ff 64 --prompt 8 --tokens 2 --capacity 64 2>&1
}
for setting in GGML_CUDA_POOL_FAULT=fail=bogus GGML_CUDA_POOL=fastest GGML_CUDA_NO_VMM=maybe GGML_CUDA_POOL_LOG=loud \
    GGML_CUDA_POOL=ggml; do
    name=${setting%%=*}
    out=$(run "$setting")
    rc=$?
    lines=$(grep -c "$name" <<<"$out")
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ]; then
        echo "FAIL $setting: exit $rc, $lines lines naming $name; output:"
        echo "$out"
        failed=1
    else
        echo "ok   $setting: exit $rc, one line: $(grep "$name" <<<"$out")"
    fi
done
for setting in GGML_CUDA_POOL= GGML_CUDA_NO_VMM= GGML_CUDA_POOL_TIMING= GGML_CUDA_POOL_LOG= GGML_CUDA_POOL_FAULT=; do
    out=$(run "$setting")
    rc=$?
    if [ "$rc" -ne 0 ] || grep -q "${setting%=}" <<<"$out"; then
        echo "FAIL $setting (empty, as unset): exit $rc; output:"
        echo "$out"
        failed=1
    else
        echo "ok   $setting (empty, as unset): exit 0"
    fi
done
exit $failed
