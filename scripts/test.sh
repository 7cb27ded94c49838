#!/usr/bin/env bash
# The test command. Installs what is missing (Debian), then runs the jobs:
#   format every tracked C/C++/CUDA source as .clang-format says, with clang-format 14
#          (scripts/check-format.sh names the files that are not)
#   main   configure, build and run every ctest label (gpu tests report SKIPPED without a GPU; bench
#          runs bench-hit briefly, timing nothing)
#   asan   address+undefined sanitizers: labels unit, fault, stress, neighbours
#   tsan   thread sanitizer: labels unit, fault, stress, neighbours
#   fuzz   the libFuzzer target (clang) for FUZZ_SECONDS (60) over tests/fuzz/corpus
#   hip    the HIP variant built with Debian's hipcc (library, tests, tools; no AMD GPU here, so
#          the unit label runs on the sim driver and the gpu label reports SKIPPED)
#   llama  the llama.cpp integration patch applies to the pinned llama.cpp and the later standalone
#          ggml, and there nvcc compiles the sources it changes and the adapter, as the tree's CMake
#          builds them, with CUDA graphs off and on and with the option off (scripts/llama-check.sh);
#          SKIPPED where a tree has no snapshot (../shared/llama.cpp and ../shared/ggml, or
#          LLAMA_SNAPSHOT, LLAMA_CPP_DIR, GGML_SNAPSHOT, GGML_DIR)
#   unit   the unit label over a build without the cuda driver (no nvcc), of what it runs alone (the
#          labels check waits for main): not in the default set
#   quick  the set a contributor runs first, before every change: format and unit (a few minutes on
#          2 cores); CI runs them all
# scripts/test.sh [job...]   (default: all; an unknown job: the usage, exit 2, nothing installed);
# extra CMake arguments in CMAKE_ARGS; --help or -h: the usage and this text.
# A ctest job names why each skipped test skipped (its own line), one line per reason.
# A skip whose reason is not found fails the job.
# The last line counts tests: passed, failed, skipped for want of a GPU, skipped for want of a
# package or tool (torch), skipped for want of a snapshot of llama.cpp or ggml.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

all_jobs=(format main asan tsan fuzz hip llama)
quick_jobs=(format unit) # scripts/test.sh quick
usage() { echo "usage: scripts/test.sh [job...]   jobs: ${all_jobs[*]} (default: all); unit; quick: ${quick_jobs[*]}"; }
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
    usage
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" # the comment above
    exit 0
fi
jobs=()
for job in "$@"; do
    if [ "$job" = quick ]; then jobs+=("${quick_jobs[@]}"); else jobs+=("$job"); fi
done
[ ${#jobs[@]} -eq 0 ] && jobs=("${all_jobs[@]}")
# a job name checked before anything is installed or built
for job in "${jobs[@]}"; do
    if [[ " ${all_jobs[*]} unit " != *" $job "* ]]; then
        echo "test.sh: unknown job: $job" >&2
        usage >&2
        exit 2
    fi
done
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
# what the unit label's tests run: its two GoogleTest programs, the tools and libraries its checks take
UNIT_TARGETS="test-unit test-torch pool-demo pool-replay reclaim-sim ggml-cuda-pool-static ggml-cuda-pool-core"
JOBS=$(nproc)

packages=(cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev pkg-config xz-utils)
[[ " ${jobs[*]} " == *" format "* ]] && packages+=(clang-format)
# the PyTorch package's install into a virtual environment (ctest torch-package)
[[ " ${jobs[*]} " == *" main "* ]] && packages+=(python3-venv python3-wheel-whl)
[[ " ${jobs[*]} " == *" fuzz "* ]] && packages+=(clang libclang-rt-14-dev)
[[ " ${jobs[*]} " == *" hip "* ]] && packages+=(hipcc libamdhip64-dev clang)
[[ " ${jobs[*]} " == *" llama "* ]] && packages+=(patch xz-utils)
need_packages "${packages[@]}" || { echo "test.sh: cannot install ${packages[*]}: no job runs" >&2; exit 1; }

passed=0
failed=0
skipped=0    # gpu tests on a machine without a GPU
not_installed=0 # tests whose package or tool is missing (torch-generate without torch), each reason named above
no_snapshot=0 # the llama job without a snapshot of llama.cpp or ggml
summary=()

# a reason that means no GPU (or none this build can use); any other is a missing package or tool
GPU_REASON='GPU|CUDA|cuda|device'

# skip_reasons BUILD_DIR: why the last ctest run's skipped tests skipped, as each said it (a GoogleTest
# case the line after "Skipped", a script its "SKIPPED: " line), one line per reason with how many
# tests gave it and the first; ctest itself shows them only under -V. Its last line, "counts: G O",
# is how many of them skipped for want of a GPU and how many for another reason
skip_reasons() {
    awk -v gpu="$GPU_REASON" '
         function keep(why) { if (!(why in n)) { first[why] = name; order[++k] = why } n[why]++ }
         /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
         /: Skipped$/ { if ((getline why) > 0) keep(why) }
         /^SKIPPED: / { keep(substr($0, 10)) }
         END { for (i = 1; i <= k; i++) { w = order[i]
                 if (w ~ gpu) g += n[w]; else o += n[w]
                 printf "skipped: %s (%d test%s: %s%s)\n", w, n[w], (n[w] > 1 ? "s" : ""), first[w], (n[w] > 1 ? ", ..." : "") }
               printf "counts: %d %d\n", g, o }' \
        "$1/Testing/Temporary/LastTest.log" 2>/dev/null
}

# ctest_job NAME BUILD_DIR LABEL_REGEX EXCLUDE_REGEX CMAKE_ARGS...: configure, build (TARGETS
# alone where set), run ctest on the labels (all when empty) but the excluded (and the tests
# SKIP_TESTS names), count
ctest_job() {
    local name=$1 dir=$2 labels=$3 exclude=$4
    shift 4
    echo "== $name =="
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} "$@" >/dev/null
    cmake --build "$dir" -j "$JOBS" ${TARGETS:+--target $TARGETS}
    local log="$dir/ctest.log" rc=0
    ctest --test-dir "$dir" --output-on-failure -j "$JOBS" ${labels:+-L "$labels"} ${exclude:+-LE "$exclude"} \
        ${SKIP_TESTS:+-E "$SKIP_TESTS"} 2>&1 | tee "$log" || rc=1
    local total fails skips
    total=$(grep -Eo 'tests failed out of [0-9]+|tests passed out of [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
    fails=$(grep -Eo '[0-9]+ tests failed' "$log" | grep -Eo '^[0-9]+' | tail -1)
    skips=$(grep -c '(Skipped)$' "$log" || true)
    local no_gpu=0 other=0 unsaid=0 lost=""
    if [ "$skips" -gt 0 ]; then
        local reasons
        reasons=$(skip_reasons "$dir" || true)
        grep -v '^counts: ' <<<"$reasons" | tee -a "$log" || true
        read -r no_gpu other < <(sed -n 's/^counts: //p' <<<"$reasons") || true # none without a log
        no_gpu=${no_gpu:-0} other=${other:-0}
        # every skip says why: one whose reason the log lost fails the job
        unsaid=$((skips - no_gpu - other))
        if [ "$unsaid" -ne 0 ]; then
            lost="; FAILED: a skip gave no reason"
            echo "$name: $skips tests skipped, $((no_gpu + other)) with a reason in $dir/Testing/Temporary/LastTest.log" | tee -a "$log"
        fi
    fi
    total=${total:-0}
    fails=${fails:-0}
    [ "$rc" -ne 0 ] && [ "$fails" -eq 0 ] && fails=1
    passed=$((passed + total - fails - skips))
    failed=$((failed + fails + (unsaid != 0)))
    skipped=$((skipped + skips - other))
    not_installed=$((not_installed + other))
    summary+=("$name: $((total - fails - skips)) passed, $fails failed, $((skips - other)) skipped (no GPU), $other skipped (not installed) of $total$lost")
}

for job in "${jobs[@]}"; do
    case $job in
        format)
            echo "== format =="
            rc=0
            out=$(bash scripts/check-format.sh 2>&1) || rc=$?
            echo "$out"
            said=$(grep -m1 '^check-format: ' <<<"$out" | sed 's/^check-format: //; s/:$//' || true)
            if [ "$rc" -eq 0 ]; then
                passed=$((passed + 1)); summary+=("format: $said")
            else
                failed=$((failed + 1)); summary+=("format: FAILED: $said")
            fi
            ;;
        main) ctest_job main build "" "" ;;
        # no nvcc, and only what the unit label runs: minutes, not main's quarter of an hour. The
        # labels check, which lists every executable's tests, waits for main
        unit) TARGETS="$UNIT_TARGETS" SKIP_TESTS='^labels$' ctest_job unit build-unit unit "" -DGGML_CUDA=OFF ;;
        # built without CUDA: the cuda driver's fault tests (labels gpu and fault) stay out
        asan) ctest_job asan build-asan 'unit|fault|stress|neighbours' gpu -DGGML_CUDA=OFF -DGGML_CPOOL_TOOLS=OFF \
                  -DGGML_CPOOL_SANITIZE=address,undefined ;;
        tsan) ctest_job tsan build-tsan 'unit|fault|stress|neighbours' gpu -DGGML_CUDA=OFF -DGGML_CPOOL_TOOLS=OFF \
                  -DGGML_CPOOL_SANITIZE=thread ;;
        fuzz)
            # the corpus replays as a ctest test, then new inputs are searched for a bounded time
            CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++" \
                ctest_job fuzz build-fuzz fuzz "" -DGGML_CUDA=OFF -DGGML_CPOOL_TESTS=OFF -DGGML_CPOOL_TOOLS=OFF \
                -DGGML_CPOOL_FUZZ=ON -DGGML_CPOOL_SANITIZE=address,undefined
            work=$(mktemp -d)
            if build-fuzz/tests/fuzz/fuzz-ops -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=4096 \
                -print_final_stats=1 "$work" tests/fuzz/corpus >build-fuzz/fuzz.log 2>&1; then
                passed=$((passed + 1))
                summary+=("fuzz: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' build-fuzz/fuzz.log), no crash")
            else
                failed=$((failed + 1))
                tail -40 build-fuzz/fuzz.log
                summary+=("fuzz: CRASH (build-fuzz/fuzz.log; the input is in the current directory)")
            fi
            rm -rf "$work"
            ;;
        hip)
            # hipcc compiles every source for a named AMD target: none is present to detect
            command -v hipcc >/dev/null || { echo "hip: hipcc is not installed" >&2; exit 1; }
            CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER=hipcc -DCMAKE_C_COMPILER=clang" \
                ctest_job hip build-hip 'unit|gpu' "" -DGGML_HIP=ON -DCMAKE_CXX_FLAGS=--offload-arch=gfx90a ;;
        llama)
            echo "== llama =="
            rc=0
            bash scripts/llama-check.sh || rc=$?
            case $rc in
                0) passed=$((passed + 1)); summary+=("llama: the patch applies and compiles in llama.cpp and ggml") ;;
                2) no_snapshot=1; summary+=("llama: SKIPPED (no snapshot of llama.cpp or ggml)") ;;
                *) failed=$((failed + 1)); summary+=("llama: FAILED (build-llama-check/)") ;;
            esac
            ;;
    esac
done

echo
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed, $skipped skipped (no GPU), $not_installed skipped (not installed)," \
    "$no_snapshot skipped (no llama.cpp or ggml snapshot)"
[ "$failed" -eq 0 ]
