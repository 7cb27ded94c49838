#!/usr/bin/env bash
# need_packages (scripts/lib.sh) counts a tool already on PATH as installed, whatever installed it:
# a package named for a tool that only a folder on PATH holds (not Debian's) installs nothing.
#   check-need-packages.sh PATH/TO/scripts
set -u
. "$1/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '#!/bin/sh\n' >"$dir/gcp-standin-tool"
chmod +x "$dir/gcp-standin-tool"
if out=$(PATH="$dir:$PATH" need_packages gcp-standin-tool-build 2>&1) && [ -z "$out" ]; then
    echo "ok   a tool on PATH: nothing to install"
else
    echo "FAIL a tool on PATH was taken for a missing package: $out"
    exit 1
fi
