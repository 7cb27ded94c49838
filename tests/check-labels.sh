#!/usr/bin/env bash
# The ctest labels README lists select their tests: `multigpu` every test that needs two GPUs,
# `fault` every fault-injection test, over either driver.
#   check-labels.sh BUILD_DIR
set -u
build=$1
# the names ctest lists with the given selection arguments, sorted
names() { ctest --test-dir "$build" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | sort; }
failed=0
expect_same() { # WHAT, then the two lists
    if [ "$2" != "$3" ] || [ -z "$2" ]; then
        echo "FAIL $1"
        diff <(echo "$2") <(echo "$3")
        failed=1
    else
        echo "ok   $1: $(wc -l <<<"$2") tests"
    fi
}
expect_same "label multigpu selects the two-GPU tests" "$(names -L multigpu)" "$(names -R '^Cuda/(MultiGpu|.*AnotherDevice)')"
expect_same "label fault selects the cuda driver's fault tests" "$(names -L fault -R '^Cuda/')" "$(names -R '^Cuda/.*Fault')"
exit $failed
