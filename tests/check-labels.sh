#!/usr/bin/env bash
# The ctest labels docs/testing.md lists select their tests. A test's labels are its executable's, so this
# checks the executables hold what their labels promise: `multigpu` every test that needs two
# GPUs, `fault` over the cuda driver every fault test of it, `gpu` every test over the cuda
# driver and `unit` none.
#   check-labels.sh BUILD_DIR
set -u
build=$1
# ctest, even with -N, rewrites the log of the folder it runs in (Testing/Temporary/LastTest.log),
# where scripts/test.sh reads why the tests of the run this check belongs to skipped: it lists
# from a copy of the build's test files (they name everything by its absolute path)
listing=$(mktemp -d)
trap 'rm -rf "$listing"' EXIT
(cd "$build" && find . -name CTestTestfile.cmake -exec cp --parents {} "$listing" \;)
# the names ctest lists with the given selection arguments, sorted
names() { ctest --test-dir "$listing" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | sort; }
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
expect_none() { # WHAT, then the list
    if [ -n "$2" ]; then
        echo "FAIL $1"
        echo "$2"
        failed=1
    else
        echo "ok   $1"
    fi
}
expect_same "label multigpu selects the two-GPU tests" "$(names -L multigpu)" "$(names -R '^Cuda/(MultiGpu|AsyncDevices)')"
expect_same "label fault selects the cuda driver's fault tests" "$(names -L fault -R '^Cuda/')" "$(names -R '^Cuda/.*Fault')"
expect_same "label gpu selects every test over the cuda driver" "$(names -L gpu -R '^Cuda/')" "$(names -R '^Cuda/')"
expect_none "label unit selects no test over the cuda driver" "$(names -L unit -R '^Cuda/')"
expect_none "label gpu selects no test over the sim driver" "$(names -L gpu -R '^Sim/')"
# the listing logged in its own folder, not in the build's
if [ -f "$listing/Testing/Temporary/LastTest.log" ]; then
    echo "ok   the listing leaves the build's test log alone"
else
    echo "FAIL the listing's ctest did not log in its own folder"
    failed=1
fi
exit $failed
