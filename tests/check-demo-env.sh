#!/usr/bin/env bash
# pool-demo with a malformed environment value: one clear error line naming the variable, and a
# non-zero exit (not one refusal per pool, then success).
#   check-demo-env.sh PATH/TO/pool-demo
set -u
demo=$1
failed=0
for setting in GGML_CUDA_POOL_FAULT=fail=bogus GGML_CUDA_POOL=fastest GGML_CUDA_NO_VMM=maybe; do
    name=${setting%%=*}
    out=$(env -u GGML_CUDA_POOL -u GGML_CUDA_NO_VMM -u GGML_CUDA_POOL_FAULT -u GGML_CUDA_POOL_LOG "$setting" \
        "$demo" --driver sim --layers 1 --embd 64 --ff 64 --prompt 8 --tokens 2 --capacity 64 2>&1)
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
exit $failed
