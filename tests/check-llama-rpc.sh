#!/usr/bin/env bash
# scripts/llama.sh rpc with stand-ins for ggml-rpc-server (a listening socket that writes a snapshot
# line on SIGUSR1), llama-completion (the same text each time; fails with the RPC backend's message
# once its second server stops listening) and llama-bench: every client runs in order, the killed
# server's client fails with that message, the survivor serves the last client the same text, the
# servers are asked for their snapshots before clients 2-5, and the bench's second round runs.
#   check-llama-rpc.sh PATH/TO/llama.sh
set -u
llama_sh=$1
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/build/bin" "$work/models" "$work/fake"
: >"$work/models/1b-f16.gguf"
port=$((20000 + $$ % 4000 * 10)) # ten ports of its own: tests beside it take others
cat >"$work/build/bin/ggml-rpc-server" <<'STUB'
#!/usr/bin/env python3
import os, signal, socket, sys, time
port = int(sys.argv[sys.argv.index("-p") + 1])
def snapshot(*_):
    with open(os.environ["GGML_CUDA_POOL_STATS"], "a") as f:
        f.write(f"ggml-cuda-pool snapshot: context=1 device=0 slot=0 pool={os.environ['GGML_CUDA_POOL']} reserved_mib=8.00\n")
signal.signal(signal.SIGUSR1, snapshot)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen()
while True:
    time.sleep(1)
STUB
# the text: the prompt, then a token a line; the second server gone: the RPC backend's abort
cat >"$work/build/bin/llama-completion" <<'STUB'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do case $1 in -p) p=$2; shift ;; -n) n=$2; shift ;; --rpc) rpc=$2; shift ;; esac; shift; done
echo "$rpc" >>"$LLAMA_WORK/clients"
printf '%s' "$p"
second=$(printf '%04X' "${rpc##*:}")
for ((i = 0; i < n; i++)); do
    printf ' token%d' "$i"
    if [ "$n" -gt 64 ] && [ "${rpc//[^,]/}" = , ]; then
        sleep 0.01
        grep -qi ":$second 00000000:0000 0A" /proc/net/tcp ||
            { echo "ggml-rpc.cpp: Remote RPC server crashed or returned malformed response" >&2; exit 134; }
    fi
done
echo "ggml-cuda-pool stats: context=1 pool=$GGML_CUDA_POOL" >>"$GGML_CUDA_POOL_STATS"
STUB
cat >"$work/build/bin/llama-bench" <<'STUB'
#!/usr/bin/env bash
echo '{"n_prompt": 512, "n_gen": 0, "avg_ts": 1000}'
echo '{"n_prompt": 0, "n_gen": 128, "avg_ts": 100}'
STUB
chmod +x "$work/build/bin/"*
out=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build CONFIGS="ggml legacy" RPC_PORT=$port GEN_TOKENS=8 \
    timeout 120 bash "$llama_sh" rpc 2>&1)
failed=0
expect() {
    if grep -qE "$1" <<<"$out$(cat "$work"/results/rpc-*.txt 2>/dev/null)"; then
        echo "ok   $1"
    else
        echo "FAIL expected: $1"
        failed=1
    fi
}
for c in ggml legacy; do
    expect "rpc: $c: client 4, server 1 killed .* exit 134: .*Remote RPC server crashed"
    expect "rpc: $c: client 5 \(server 0 alone\), exit 0"
    expect "rpc bench round 2: $c: 2 tests"
    for f in server0 server1; do
        n=$(grep -c snapshot "$work/results/rpc-$c-$f.stats" 2>/dev/null)
        want=$([ $f = server0 ] && echo 5 || echo 3) # server 1 is gone after client 4
        [ "${n:-0}" -ge "$want" ] && echo "ok   $c $f: $n snapshots" ||
            { echo "FAIL $c $f: ${n:-0} snapshots, expected $want"; failed=1; }
    done
done
[ "$(grep -c 'TEXT DIFFERS' <<<"$out")" -eq 0 ] && [ "$(grep -c 'text identical' <<<"$out")" -eq 6 ] &&
    echo "ok   clients 1, 2 and 5: the single process's text" || { echo "FAIL texts"; failed=1; }
# a listener already on the second port (a server left over): the step stops instead of using it,
# and the first server it started does not outlive it
python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $((port + 1)))); s.listen(); time.sleep(30)" &
taken=$!
sleep 0.5
out2=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build CONFIGS="plain" RPC_PORT=$port GEN_TOKENS=8 \
    timeout 60 bash "$llama_sh" rpc 2>&1)
kill $taken
if grep -q "port $((port + 1)) is in use" <<<"$out2" && ! pgrep -f "ggml-rpc-server -H 127.0.0.1 -p $port" >/dev/null; then
    echo "ok   a port in use stops the step"
else
    echo "FAIL a port in use: $out2"
    failed=1
fi
[ "$failed" -eq 0 ] || echo "$out"
exit $failed
