#!/usr/bin/env bash
# scripts/test.sh with a job it does not know, alone or after a real one: exit 2 naming it, the
# usage and every job, before anything is installed or built; with --help or -h: exit 0, the usage,
# every job and what it does, nothing run; quick: format and unit; a ctest job whose tests skip:
# why each skipped, one line per reason, counted as no GPU or not installed by the reason, and the
# job failed where one gave none. The scripts run in a stand-in tree with apt-get, sudo,
# dpkg-query, cmake and ctest stand-ins first on PATH that record each call.
#   check-test-jobs.sh PATH/TO/scripts
set -u
scripts=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts" "$tree/bin"
cp "$scripts/test.sh" "$scripts/lib.sh" "$tree/scripts/"
for tool in apt-get sudo dpkg-query cmake ctest; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$tree" >"$tree/bin/$tool"
    chmod +x "$tree/bin/$tool"
done

failed=0
# test.sh ARGS... with the stand-ins first on PATH: out (its stdout, and its stderr where WHICH is
# all), rc, and calls (what the stand-ins recorded)
run_test_sh() {
    local which=$1
    shift
    if [ "$which" = all ]; then
        out=$(PATH="$tree/bin:$PATH" bash "$tree/scripts/test.sh" "$@" 2>&1)
    else
        out=$(PATH="$tree/bin:$PATH" bash "$tree/scripts/test.sh" "$@" 2>/dev/null)
    fi
    rc=$?
    calls=$(cat "$tree/calls" 2>/dev/null)
    rm -f "$tree/calls"
}
# "ok WHAT" where the last checks held (status $1), else FAIL with the run's output and calls
verdict() {
    if [ "$1" -eq 0 ]; then
        echo "ok   $2"
        return
    fi
    echo "FAIL ${2%%:*}: exit $rc; output:"
    echo "$out" | head -20
    echo "calls made: ${calls:-none}"
    failed=1
}

for args in "bogus" "main bogus"; do
    run_test_sh all $args
    [ "$rc" -eq 2 ] && grep -q "unknown job: bogus" <<<"$out" && grep -q "^usage: scripts/test.sh" <<<"$out" &&
        grep -q "format main asan tsan fuzz hip llama" <<<"$out" && [ -z "$calls" ]
    verdict $? "test.sh $args: exit 2, the job named, the usage and every job, nothing run"
done

for help in --help -h; do
    run_test_sh stdout $help
    [ "$rc" -eq 0 ] && grep -q "^usage: scripts/test.sh" <<<"$out" && grep -q "format main asan tsan fuzz hip llama" <<<"$out" &&
        grep -q "^  tsan   thread sanitizer" <<<"$out" && [ -z "$calls" ]
    verdict $? "test.sh $help: exit 0, the usage and every job on stdout, nothing run"
done

# quick: format, then the unit label over a build without the cuda driver
run_test_sh all quick
grep -q "^== format ==$" <<<"$out" && grep -q "^== unit ==$" <<<"$out" &&
    grep -q "^cmake -S . -B build-unit .*-DGGML_CUDA=OFF" <<<"$calls" && grep -q "^ctest --test-dir build-unit .*-L unit" <<<"$calls"
verdict $? "test.sh quick: format, then the unit label over a build without the cuda driver"

# the main job with a ctest whose runs left two GoogleTest cases and a script skipped, as ctest's
# log keeps them: the job names both reasons, the first with its two tests
cat >"$tree/bin/ctest" <<'SH'
#!/bin/sh
mkdir -p build/Testing/Temporary
cat >build/Testing/Temporary/LastTest.log <<'LOG'
1/3 Testing: Cuda/Rules.Alloc
Output:
harness.cpp:30: Skipped
cuda driver unavailable: UNSUPPORTED
[  SKIPPED ] Cuda/Rules.Alloc (0 ms)
<end of output>
2/3 Testing: Cuda/Rules.Free
Output:
harness.cpp:30: Skipped
cuda driver unavailable: UNSUPPORTED
<end of output>
3/3 Testing: torch-generate
Output:
SKIPPED: cannot import torch
<end of output>
LOG
printf '100%% tests passed, 0 tests failed out of 3\n\nThe following tests did not run:\n'
printf '\t  1 - Cuda/Rules.Alloc (Skipped)\n\t  2 - Cuda/Rules.Free (Skipped)\n\t  3 - torch-generate (Skipped)\n'
SH
mkdir -p "$tree/build"
out=$(cd "$tree" && PATH="$tree/bin:$PATH" bash scripts/test.sh main 2>&1)
if grep -q "^skipped: cuda driver unavailable: UNSUPPORTED (2 tests: Cuda/Rules.Alloc, ...)$" <<<"$out" &&
    grep -q "^skipped: cannot import torch (1 test: torch-generate)$" <<<"$out" &&
    grep -q "^0 passed, 0 failed, 2 skipped (no GPU), 1 skipped (not installed), 0 skipped" <<<"$out"; then
    echo "ok   test.sh main: why each test skipped, one line per reason, torch's apart from the GPU's"
else
    echo "FAIL test.sh main: the skip reasons not named or not counted by what they want; output:"
    echo "$out" | tail -20
    failed=1
fi

# a log that lost a skipped test's reason (another ctest rewrote it): the job fails, saying so
sed -i '/^SKIPPED: cannot import torch$/d' "$tree/bin/ctest"
out=$(cd "$tree" && PATH="$tree/bin:$PATH" bash scripts/test.sh main 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -q "^main: 3 tests skipped, 2 with a reason in build/Testing/Temporary/LastTest.log$" <<<"$out" &&
    grep -q "^0 passed, 1 failed" <<<"$out"; then
    echo "ok   test.sh main: a skip without its reason fails the job"
else
    echo "FAIL test.sh main: a skip without its reason passed unsaid (exit $rc); output:"
    echo "$out" | tail -20
    failed=1
fi
exit $failed
