#!/usr/bin/env bash
# scripts/run.sh over a tree whose demo does not compile: it exits non-zero and shows the
# compiler's error, not a bare exit status; over one whose demo compiles, it runs the demo with the
# arguments and shows nothing of the build; with --help, it says what it does and that it builds
# first, then shows the demo's help. The tree is a stand-in (run.sh, lib.sh, a CMake
# project whose pool-demo is one small file), so the check builds one small file.
#   check-run-build.sh PATH/TO/scripts
set -u
scripts=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts" "$tree/tools"
cp "$scripts/run.sh" "$scripts/lib.sh" "$tree/scripts/"
cat >"$tree/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(broken CXX)
add_subdirectory(tools)
CMAKE
echo 'add_executable(pool-demo pool-demo.cpp)' >"$tree/tools/CMakeLists.txt"
echo 'int main() { return no_such_name_in_the_demo; }' >"$tree/tools/pool-demo.cpp"

failed=0
out=$(BUILD_DIR="$tree/build" bash "$tree/scripts/run.sh" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -q "no_such_name_in_the_demo" <<<"$out"; then
    echo "ok   a broken build: exit $rc, its error shown"
else
    echo "FAIL a broken build: exit $rc, the compiler's error not shown; output:"
    echo "$out"
    failed=1
fi

cat >"$tree/tools/pool-demo.cpp" <<'CPP'
#include <cstdio>
int main(int argc, char ** argv) { printf("demo %s\n", argc > 1 ? argv[1] : ""); }
CPP
out=$(BUILD_DIR="$tree/build" bash "$tree/scripts/run.sh" --kinds 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$out" = "demo --kinds" ]; then
    echo "ok   a build that succeeds: quiet, the demo run with the arguments"
else
    echo "FAIL a build that succeeds: exit $rc; output:"
    echo "$out"
    failed=1
fi
# --help: what run.sh does, that it builds first, then the demo's own help
out=$(BUILD_DIR="$tree/build" bash "$tree/scripts/run.sh" --help 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^usage: scripts/run.sh" <<<"$out" && grep -q "builds the demo first" <<<"$out" &&
    grep -q "^demo --help$" <<<"$out"; then
    echo "ok   --help: what run.sh does, that it builds first, then the demo's options"
else
    echo "FAIL --help: exit $rc; output:"
    echo "$out"
    failed=1
fi
exit $failed
