#!/usr/bin/env bash
# The format check: every tracked C/C++/CUDA source (.c .cc .cpp .h .hpp .cu .cuh) is as
# .clang-format says, as clang-format 14 reads it (the version CI runs; another formats some
# constructs differently). Exit 0 when every file is, 1 naming the files that are not, 2 when it
# cannot check (no clang-format 14, not a git checkout). CLANG_FORMAT picks the binary.
# Fix a file with `clang-format -i FILE`; a block whose hand alignment is the point (a table, the
# public headers' declarations) goes between // clang-format off and // clang-format on.
set -euo pipefail
cd "$(dirname "$0")/.."

cf=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
[ -n "$cf" ] || { echo "check-format: clang-format is not installed" >&2; exit 2; }
version=$("$cf" --version 2>/dev/null | grep -Eo 'clang-format version [0-9.]+' | cut -d' ' -f3 || true)
[ "${version%%.*}" = 14 ] ||
    { echo "check-format: .clang-format is checked with clang-format 14; $cf is ${version:-not clang-format}" >&2; exit 2; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check-format: not a git checkout" >&2; exit 2; }

mapfile -d '' files < <(git ls-files -z -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
rc=0
out=$("$cf" --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
# one line per place that differs: FILE:LINE:COLUMN: error: code should be clang-formatted
bad=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: error: code should be clang-formatted' <<<"$out" | cut -d: -f1 | uniq -c || true)
if [ "$rc" -ne 0 ] && [ -z "$bad" ]; then
    head -n 5 <<<"$out" >&2
    echo "check-format: clang-format $version failed" >&2
    exit 2
fi
if [ -n "$bad" ]; then
    echo "check-format: $(wc -l <<<"$bad") of ${#files[@]} files differ from .clang-format (clang-format $version):"
    while read -r n file; do
        [ "$n" -eq 1 ] && echo "  $file (1 place)" || echo "  $file ($n places)"
    done <<<"$bad"
    echo "fix: clang-format -i FILE..."
    exit 1
fi
echo "check-format: ${#files[@]} files as .clang-format says (clang-format $version)"
