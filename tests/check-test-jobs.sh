#!/usr/bin/env bash
# scripts/test.sh with a job it does not know, alone or after a real one: exit 2 naming it, the
# usage and every job, before anything is installed or built. The scripts run in a stand-in tree
# with apt-get, sudo, dpkg-query, cmake and ctest stand-ins first on PATH that record each call.
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
for args in "bogus" "main bogus"; do
    out=$(PATH="$tree/bin:$PATH" bash "$tree/scripts/test.sh" $args 2>&1)
    rc=$?
    calls=$(cat "$tree/calls" 2>/dev/null)
    rm -f "$tree/calls"
    if [ "$rc" -eq 2 ] && grep -q "unknown job: bogus" <<<"$out" && grep -q "^usage: scripts/test.sh" <<<"$out" &&
        grep -q "format main asan tsan fuzz hip llama" <<<"$out" && [ -z "$calls" ]; then
        echo "ok   test.sh $args: exit 2, the job named, the usage and every job, nothing run"
    else
        echo "FAIL test.sh $args: exit $rc; output:"
        echo "$out" | head -20
        echo "calls made: ${calls:-none}"
        failed=1
    fi
done
exit $failed
