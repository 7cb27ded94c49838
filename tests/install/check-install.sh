#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a C consumer against it
# through find_package (shared and static library) and through pkg-config.
#   check-install.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/build/app"
"$work/build/app_static"
pc=$(find "$work/prefix" -name ggml-cuda-pool.pc)
cc "$here/app.c" $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs ggml-cuda-pool) -o "$work/app_pc"
LD_LIBRARY_PATH="$(dirname "$(dirname "$pc")")" "$work/app_pc"
echo "install, find_package and pkg-config: ok"
