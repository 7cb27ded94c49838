#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a C consumer against it
# through find_package (shared and static library) and through pkg-config, each run without
# LD_LIBRARY_PATH (the shared library found through its run path). The default install holds the C
# library and its headers alone: no PyTorch library, no testing header, which --component testing
# adds.
#   check-install.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" >/dev/null
extra=$(find "$prefix" -name 'ggml-cuda-pool-testing.h' -o -name 'ggml-cuda-pool-calls.h' -o -name '*torch*')
[ -z "$extra" ] || { echo "FAILED: the default install holds more than the C library: $extra"; exit 1; }
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/app"
"$work/build/app_static"
pc=$(find "$prefix" -name ggml-cuda-pool.pc)
pkg() { PKG_CONFIG_PATH=$(dirname "$pc") pkg-config "$@" ggml-cuda-pool; }
cc "$here/app.c" $(pkg --cflags --libs) -o "$work/app_pc"
"$work/app_pc"
cmake --install "$build" --prefix "$prefix" --component testing >/dev/null
[ -f "$prefix/include/ggml-cuda-pool-testing.h" ] || { echo "FAILED: --component testing installs no testing header"; exit 1; }
cc "$here/app-testing.c" $(pkg --cflags --libs) -o "$work/app_testing"
"$work/app_testing"
echo "install (the C library alone; its testing header when asked), find_package and pkg-config, no LD_LIBRARY_PATH: ok"
