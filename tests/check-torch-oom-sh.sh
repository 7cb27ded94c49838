#!/usr/bin/env bash
# scripts/torch-oom.sh with a python that cannot import torch: SKIPPED (77) with the python's own
# reason, before anything is configured or built (a cmake stand-in first on PATH records any call).
#   check-torch-oom-sh.sh PATH/TO/scripts
set -u
scripts=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/bin"
printf '#!/bin/sh\necho "cmake $*" >>"%s/calls"\n' "$tree" >"$tree/bin/cmake"
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named '"'"'torch'"'"'" >&2\nexit 1\n' >"$tree/bin/python"
chmod +x "$tree/bin/cmake" "$tree/bin/python"
out=$(PATH="$tree/bin:$PATH" PYTHON=python BUILD_DIR="$tree/build" timeout 60 bash "$scripts/torch-oom.sh" 2>&1)
rc=$?
if [ "$rc" -eq 77 ] && [ "$out" = "SKIPPED: $tree/bin/python: ModuleNotFoundError: No module named 'torch'" ] &&
    [ ! -e "$tree/calls" ]; then
    echo "ok   no torch: SKIPPED with the reason, nothing built"
else
    echo "FAIL no torch: exit $rc, cmake calls: $(cat "$tree/calls" 2>/dev/null || echo none); output:"
    echo "$out"
    exit 1
fi
