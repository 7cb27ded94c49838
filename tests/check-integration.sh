#!/usr/bin/env bash
# The module inside a host library of default visibility, added as the llama.cpp integration adds
# it (tests/integration/): the library exports the host's own functions and none of the module's,
# and no call binds to a module function through the PLT (an interposable call costs a GOT line
# and is never inlined). Exit 1 naming what leaks.
#   check-integration.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src/tests/integration" -B "$work" -DGCP_DIR="$src" -DCMAKE_BUILD_TYPE=Release >"$work/log" 2>&1 &&
    cmake --build "$work" -j "$(nproc)" >>"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
lib=$work/libhost.so
exported=$(nm -D --defined-only -C "$lib")
grep -q '\bhost_pool_kind_count\b' <<<"$exported" ||
    { echo "integration: the host's own function is not exported: the check would see nothing"; exit 1; }
leaked=$(grep -E '\b(gcp::|ggml_cpool_)' <<<"$exported" || true)
[ -z "$leaked" ] || { echo "integration: the host library exports the module's symbols:"; head -5 <<<"$leaked"; exit 1; }
plt=$(readelf -rW "$lib" | c++filt | grep -E 'JUMP_SLOT|GLOB_DAT' | grep -E '\b(gcp::|ggml_cpool_)' || true)
[ -z "$plt" ] || { echo "integration: calls bind to the module through the PLT or GOT:"; head -5 <<<"$plt"; exit 1; }
echo "integration: the host exports its own functions and none of the module's; no module call goes through the PLT"
