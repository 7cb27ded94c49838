# shellcheck shell=bash disable=SC2034  # sourced: its variables are the sourcing check's
# What the checks of scripts/llama.sh's server steps share (sourced by check-llama-serve.sh and
# check-llama-spikes.sh, PATH/TO/llama.sh their argument): a work folder removed on exit, the
# stand-ins in place of the build's llama-server and the co-tenant, ten ports, and expect.
set -u
llama_sh=$1
results_py=$(dirname "$llama_sh")/results.py
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/build/bin" "$work/models"
: >"$work/models/8b-q8_0.gguf"
port=$((20000 + $$ % 4000 * 10)) # ten ports of its own: tests beside it take others
cp "$(dirname "${BASH_SOURCE[0]}")/llama-server" "$work/build/bin/llama-server"
cp "$(dirname "${BASH_SOURCE[0]}")/hold-memory" "$work/hold-memory"
failed=0
# expect TEXT PATTERN WHAT: ok where the extended regex PATTERN matches TEXT, else FAIL and failed=1
expect() {
    if grep -qE "$2" <<<"$1"; then
        echo "ok   $3"
    else
        echo "FAIL $3: expected $2"
        failed=1
    fi
}
