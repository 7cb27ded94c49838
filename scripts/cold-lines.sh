#!/usr/bin/env bash
# The cache lines a cold alloc + free pair misses, per pool, counted rather than timed: bench-hit's
# cold family under cachegrind, whose last-level cache (2 MiB) is smaller than the walk bench-hit
# makes before each call (4 MiB), so every line a call touches is a miss, as in an engine whose
# kernel launches evict the pool between two calls. Prints, per pool at DEPTH cached buffers, the
# missed read and write lines and the instructions of one pair, inside the pool's calls (the C API
# and below; the setup before the timed pairs and the clock's reads are left out). Deterministic:
# the same build gives the same figures, so a change in the hit path shows here before a GPU run.
#   scripts/cold-lines.sh [BUILD_DIR] [DEPTH]     (defaults: build, 8)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages valgrind python3

build=${1:-build}
depth=${2:-8}
bench=$build/tools/bench-hit
[ -x "$bench" ] || { echo "cold-lines: $bench is not built (Google Benchmark is needed)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '%-16s %12s %12s %14s %11s\n' pool "read lines" "write lines" instructions "code lines"
for pool in ${POOLS:-ggml-vmm-style ggml-style legacy plain vmm async async-declared}; do
    valgrind --tool=cachegrind --cache-sim=yes --LL=2097152,16,64 --cachegrind-out-file="$out/$pool" \
        "$bench" --benchmark_filter="^cold/$pool/$depth/" --benchmark_repetitions=1 >"$out/$pool.log" 2>&1
    cg_annotate --auto=no --show-percs=no --threshold=0 "$out/$pool" 2>/dev/null | python3 -c '
import re, sys
pool = sys.argv[1]
pairs = None
ir = rd = wr = 0
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+" + r"([\d,.]+)\s+" * 8 + r"(\S.*)$", line)
    if not m:
        continue
    v = [int(x.replace(",", "")) if x != "." else 0 for x in m.groups()[:9]]
    where = m.group(10)
    # the pair: the C API call and everything below it, not the setup around the timed loop
    if not re.search(r"ggml_cpool_(alloc|free)\b|gcp::|ggml_style", where):
        continue
    if re.search(r"context|create|~|grow|reserve\(\)|stream_slots|remark|release_oldest|bench_|pair_timer", where):
        continue
    ir += v[0]; rd += v[5]; wr += v[8]
with open(sys.argv[2]) as log:
    pairs = int(re.search(r"iterations:(\d+)", log.read()).group(1))
print("%-16s %12.1f %12.1f %14.0f" % (pool, rd / pairs, wr / pairs, ir / pairs), end=" ")
' "$pool" "$out/$pool.log"
    # the pair's calls: the C API's, or a ggml-shaped pool's own
    case $pool in
    ggml-vmm-style) calls=(ggml_style_vmm_pool::alloc ggml_style_vmm_pool::free) ;;
    ggml-style) calls=("ggml_style_pool_on<*>::alloc" "ggml_style_pool_on<*>::free") ;;
    *) calls=(ggml_cpool_alloc ggml_cpool_free) ;;
    esac
    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
        --toggle-collect="*${calls[0]}*" --toggle-collect="*${calls[1]}*" --callgrind-out-file="$out/$pool.code" \
        "$bench" --benchmark_filter="^cold/$pool/$depth/" --benchmark_repetitions=1 >"$out/$pool.code.log" 2>&1
    python3 -c '
import re, sys
pairs = int(re.search(r"iterations:(\d+)", open(sys.argv[2]).read()).group(1))
runs, obj, skip = {}, "", False
for line in open(sys.argv[1]):
    if line.startswith("ob="):
        obj = line[3:].strip()
        continue
    if line.startswith("calls="):  # the next line is the call: its cost is the callee'"'"'s
        skip = True
        continue
    m = re.match(r"(0x[0-9a-f]+) \d+ (\d+)", line)
    if m and not skip:
        key = (obj, int(m.group(1), 16))
        runs[key] = runs.get(key, 0) + int(m.group(2))
    skip = False
# an instruction every pair runs (the warm-up before the timed pairs runs some of them too)
print("%11d" % len({(o, a // 64) for (o, a), n in runs.items() if n >= 0.9 * pairs}))
' "$out/$pool.code" "$out/$pool.code.log"
done
