#!/usr/bin/env bash
# scripts/llama.sh serve with stand-ins for llama-server (an HTTP server that answers /completion;
# under ggml's pools it dies while the co-tenant holds memory, as ggml aborts on a refusal; under
# a module kind it answers "Compute error." while the fault window's file exists, as llama-server
# answers a failed batch, after waiting GGML_CUDA_POOL_WAIT_MS for the window to close) and hold-memory: every case runs, ggml's server is lost to the spike with
# every request after it, the module's server answers the window's requests with the error and
# completes every request after it, and the summary prints the three tables.
#   check-llama-serve.sh PATH/TO/llama.sh
set -u
llama_sh=$1
results_py=$(dirname "$llama_sh")/results.py
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/build/bin" "$work/models"
: >"$work/models/8b-q8_0.gguf"
port=$((20000 + $$ % 4000 * 10)) # ten ports of its own: tests beside it take others
cat >"$work/build/bin/llama-server" <<'STUB'
#!/usr/bin/env python3
import http.server, json, os, signal, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
pools = os.environ.get("GGML_CUDA_POOL", "")
window = os.environ.get("GGML_CUDA_POOL_FAULT", "").partition("while=")[2]
held = os.path.join(os.environ["LLAMA_WORK"], "held")
waits = [0, 0, 0.0]  # waits, waits served, s waited
def stop(*_):
    with open(os.environ["GGML_CUDA_POOL_STATS"], "a") as f:
        f.write(f"ggml-cuda-pool stats: context=1 device=0 slot=0 pool={pools} allocs=1000 hits=990 driver_allocs=10 "
                "peak_live_mib=40.00 peak_reserved_mib=48.00 oom=0 call_ms=0.150 "
                f"waits={waits[0]} waits_served={waits[1]} wait_ms={waits[2] * 1000:.1f}\n")
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer(200, {"status": "ok"})
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if pools.startswith("ggml") and os.path.exists(held):
            os._exit(134)  # ggml's pool aborts on the refusal
        waited = bool(window) and os.path.exists(window)
        if waited:  # the pools wait up to their budget for the window to close
            waits[0] += 1
            t = time.time()
            while os.path.exists(window) and time.time() - t < int(os.environ.get("GGML_CUDA_POOL_WAIT_MS", "0")) / 1000:
                time.sleep(0.02)
            waits[2] += time.time() - t
        if window and os.path.exists(window):
            print("ggml-cuda-pool: alloc of 8.00 MiB on device 0 failed (OUT_OF_MEMORY): CUDA pool[0]: alloc of 8.00 MiB "
                  "failed: out of memory with nothing cached (0.00 MiB live); the compute fails with "
                  "GGML_STATUS_ALLOC_FAILED", file=sys.stderr, flush=True)
            return self.answer(500, {"error": {"code": 500, "message": "Compute error.", "type": "server_error"}})
        waits[1] += waited
        self.answer(200, {"timings": {"prompt_n": len(req["prompt"].split()), "predicted_n": req["n_predict"]}})
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
STUB
cat >"$work/hold-memory" <<'STUB'
#!/usr/bin/env bash
trap 'rm -f "$LLAMA_WORK/held"; exit 0' TERM
: >"$LLAMA_WORK/held"
echo "hold-memory: holding all but $1 MiB"
while sleep 0.05; do :; done
STUB
chmod +x "$work/build/bin/llama-server" "$work/hold-memory"
out=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=3 \
    SERVE_PARALLEL=2 timeout 300 bash "$llama_sh" serve 2>&1)
failed=0
expect() {
    if grep -qE "$1" <<<"$out"; then
        echo "ok   $2"
    else
        echo "FAIL $2: expected $1"
        failed=1
    fi
}
done_all='"before": \{"completed": 3, "error": 0, "lost": 0, "predicted": [0-9]+[^}]*\}, "during": \{"completed": 3, "error": 0, "lost": 0, "predicted": [0-9]+[^}]*\}, "after": \{"completed": 3'
expect "serve: ggml free: .*$done_all" "ggml unconstrained: every request completed"
expect "serve: legacy free: .*$done_all" "legacy unconstrained: every request completed"
expect 'serve: ggml spike: .*"during": \{"completed": 0, "error": 0, "lost": 3.*"after": \{"completed": 0, "error": 0, "lost": 3.*"alive_after": false' \
    "ggml under the spike: the server is lost with every later request"
expect "serve: legacy spike: .*$done_all.*\"alive_after\": true" "legacy under the spike: served throughout"
expect 'serve: legacy window: .*"during": \{"completed": 0, "error": 3, "lost": 0.*"after": \{"completed": 3, "error": 0, "lost": 0.*"alive_after": true.*Compute error' \
    "legacy under the fault window: its requests fail with the error, the server lives, every later request completes"
grep -q "serve: ggml window" <<<"$out" && { echo "FAIL ggml ran the window case"; failed=1; } ||
    echo "ok   no window case under ggml's pools (the fault driver is the module's)"
[ ! -e "$work/results/serve-legacy-window.window" ] && [ ! -e "$work/held" ] &&
    echo "ok   the window and the co-tenant end with their phase" || { echo "FAIL the window or the co-tenant outlived its phase"; failed=1; }
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "llama-server, unconstrained" "\| legacy \| 9 of 9 \| .* \| 48 \| 40 \| 10 \| 150 \|" \
    "\| ggml \| 3 of 3 \| 0 / 0 / 3 \| \*\*dead\*\* \| 0 of 3 \| " "\| legacy \| 3 of 3 \| 0 / 3 / 0 \| alive \| 3 of 3 \|.*\| the pool, 8.00 MiB asked: out of memory with nothing cached"; do
    grep -qE "$want" <<<"$tables" && echo "ok   summary: $want" || { echo "FAIL summary: $want"; failed=1; }
done
# a rerun skips what finished
again=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port timeout 60 bash "$llama_sh" serve 2>&1)
grep -q "serve: " <<<"$again" && { echo "FAIL a rerun ran again: $again"; failed=1; } || echo "ok   a rerun skips finished runs"
# a round of the unconstrained case: its files in serve-r2/, where the pairs table reads rounds
round=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=1 \
    SERVE_PARALLEL=2 SERVE_CASES=free SERVE_ROUND=2 timeout 120 bash "$llama_sh" serve 2>&1)
[ -s "$work/results/serve-r2/serve-ggml-free.stats" ] && [ -s "$work/results/serve-r2/serve-legacy-free.stats" ] &&
    [ ! -e "$work/results/serve-r2/serve-ggml-spike-h64.jsonl" ] && echo "ok   SERVE_ROUND: the round's runs in serve-r2/" ||
    { echo "FAIL SERVE_ROUND: $round"; failed=1; }
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| llama-server \| ggml \| 1 \| 150 \| 150 \| 1.00x \|" "\| llama-server \| legacy \| 1 \| 150 \| 150 \| 1.00x \|"; do
    grep -qE "$want" <<<"$tables" && echo "ok   summary: $want" || { echo "FAIL summary: $want"; failed=1; }
done
grep -q "r2/" <<<"$tables" && { echo "FAIL a round's runs in the unconstrained table"; failed=1; } ||
    echo "ok   the round's runs stay out of the unconstrained table"
# stretches of fixed length, ended by time: a window of 1 s under a wait of 3 s serves every request,
# the ones in flight through it included; a co-tenant of 1 s from start-up kills ggml's server at once
timed=$(LLAMA_WORK=$work LLAMA_BUILD=$work/build SERVE_CONFIGS="ggml legacy" SERVE_PORT=$port SERVE_PER_PHASE=3 \
    SERVE_PARALLEL=2 SERVE_CASES="window:1 spike:1:start" GGML_CUDA_POOL_WAIT_MS=3000 timeout 120 bash "$llama_sh" serve 2>&1)
expect_in() { grep -qE "$2" <<<"$1" && echo "ok   $3" || { echo "FAIL $3: expected $2"; failed=1; }; }
expect_in "$timed" "serve: legacy window:1: .*$done_all.*\"alive_after\": true, .*\"stretch_s\": 1\.[0-2]" \
    "legacy through a window of 1 s within the wait: every request served; the window lasts 1 s"
expect_in "$timed" 'serve: legacy window:1: .*"during": \{[^}]*"met_trouble_completed": [1-3]\}' \
    "legacy through a window of 1 s: the requests in flight through it served"
expect_in "$timed" 'serve: ggml spike:1:start: .*"before": \{"completed": 0, "error": 0, "lost": 3.*"alive_after": false.*"stretch_from_s": 0\.' \
    "ggml under a co-tenant from start-up: lost with the first requests"
tables=$(python3 "$results_py" summary "$work/results" 2>&1)
for want in "\| fault window, 1 s mid-run \| legacy \| 9 \| 9 \([1-3]\) \| 0 \| 0 \| alive \| 1\.[0-2] \| [1-3] of [1-3] \(" \
    "\| co-tenant, 64 MiB free, 1 s from start-up \| ggml \| 9 \| 0 \(0\) \| 0 \| 9 \| \*\*dead\*\* \|"; do
    grep -qE "$want" <<<"$tables" && echo "ok   summary: $want" || { echo "FAIL summary: $want"; failed=1; }
done
[ "$failed" -eq 0 ] || { echo "$out"; echo "$timed"; echo "$tables"; }
exit $failed
