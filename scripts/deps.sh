#!/usr/bin/env bash
# Copies GoogleTest's source and Google Benchmark's headers and library into .deps/ so that a
# machine without packages or network (the GPU machine) can build the tests and benchmarks:
# carry .deps with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages googletest libbenchmark-dev
mkdir -p .deps
rm -rf .deps/googletest .deps/benchmark
cp -r /usr/src/googletest .deps/googletest
# Google Benchmark as a small prefix: headers and the shared library
mkdir -p .deps/benchmark/include .deps/benchmark/lib
cp -r /usr/include/benchmark .deps/benchmark/include/
cp -P /usr/lib/x86_64-linux-gnu/libbenchmark.so* .deps/benchmark/lib/
du -sh .deps
