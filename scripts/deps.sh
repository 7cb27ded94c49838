#!/usr/bin/env bash
# Copies the GoogleTest source into .deps/ so that a machine without packages or network (the
# GPU machine) can build the tests: carry .deps with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_packages googletest
mkdir -p .deps
rm -rf .deps/googletest
cp -r /usr/src/googletest .deps/googletest
du -sh .deps
