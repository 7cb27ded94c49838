#!/usr/bin/env python3
"""scripts/llama-bench-split.py on a made-up rotating llama-bench run: three configurations taking
turns over the contexts of one process, three depths each. Every configuration must get its own
tests (each depth once, with its own samples) and its own contexts' lines, which llama-summary.py
then tables like any round; a run whose contexts do not pair up with its tests must be refused,
leaving nothing behind.

    check-llama-bench-split.py PATH/TO/llama-bench-split.py PATH/TO/llama-summary.py
"""

import json
import os
import subprocess
import sys
import tempfile

from script_check import captured, check, load_script

CONFIGS = ("ggml", "legacy", "vmm")  # the rotation, in its order
DEPTHS = (0, 4096, 32768)
PREFIX = "bench-1b-q8_0-f16"


def speed(config, depth):
    """a made-up t/s that names its configuration and depth"""
    return 700.0 - depth / 1000 + CONFIGS.index(config)


def write_run(results, rnd, drop_graphs_of=None):
    """the depths in order, every configuration in turn at each: one context per test"""
    tests, stats = [], []
    session = 0
    for depth in DEPTHS:
        for config in CONFIGS:
            session += 1
            tests.append(json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": depth,
                                     "samples_ts": [speed(config, depth)] * 3}) + "\n")
            stats.append(f"ggml-cuda-pool stats: session={session} device=0 slot=0 pool={config} allocs={session} "
                         "hits=1 driver_allocs=1 driver_frees=0 peak_live_mib=1.00 peak_reserved_mib=2.00 "
                         "lru_reclaims=0 flushes=0 oom=0 syncs=0 growing_requests=0 growing_peak_request_mib=0.00 "
                         "growing_peak_buffer_mib=0.00 call_ms=0.100\n")
            if session != drop_graphs_of:
                stats.append(f"ggml-cuda-pool graphs: session={session} eager=1 captures=1 instantiations=1 "
                             f"updates=1 update_failures=0 launches=128 abandoned=0 config={config}\n")
    os.makedirs(os.path.join(results, "rotate"), exist_ok=True)
    base = os.path.join(results, "rotate", f"{PREFIX}-r{rnd}")
    with open(base + ".jsonl", "w") as f:
        f.writelines(tests)
    with open(base + ".stats", "w") as f:
        f.writelines(stats)


def run_split(split, results, rnd):
    return subprocess.run([sys.executable, split, results, PREFIX, str(rnd)], capture_output=True, text=True)


def main():
    split, summary_path = sys.argv[1:3]
    summary = load_script(summary_path, "llama_summary")
    with tempfile.TemporaryDirectory() as results:
        for rnd in (1, 2):
            write_run(results, rnd)
            done = run_split(split, results, rnd)
            check(done.returncode == 0, f"round {rnd} split", done.stdout + done.stderr)
        for config in CONFIGS:
            with open(os.path.join(results, f"{PREFIX}-{config}-r1.jsonl")) as f:
                tests = [json.loads(line) for line in f]
            got = [(t["n_depth"], t["samples_ts"][0]) for t in tests]
            want = [(d, speed(config, d)) for d in DEPTHS]
            check(got == want, f"{config}: its own test at every depth: {got}", "")
            with open(os.path.join(results, f"{PREFIX}-{config}-r1.stats")) as f:
                stats = f.read()
            allocs = [int(part.split("=")[1]) for part in stats.split() if part.startswith("allocs=")]
            sessions = [int(part.split("=")[1]) for part in stats.split() if part.startswith("session=")]
            want = [d * len(CONFIGS) + CONFIGS.index(config) + 1 for d in range(len(DEPTHS))]
            check(allocs == want and sessions == [1, 1, 2, 2, 3, 3],
                  f"{config}: its own contexts' lines (allocs {allocs}, the process's contexts {want}), numbered "
                  f"from 1: {sessions}", stats)
        _, bench = captured(summary.bench, results)
        row = next((l for l in bench.splitlines() if l.startswith("| 1b-q8_0 | f16 | tg128 | 0 |")), "")
        check(all(f"n=6" in cell for cell in row.split("|")[5:8]) and "1.001x" in row and "1.003x" in row,
              "llama-summary tables the split rounds: 6 samples a configuration, legacy and vmm 1 and 2 t/s "
              "above ggml's 700", bench)

        write_run(results, 3, drop_graphs_of=4)
        refused = run_split(split, results, 3)
        left = [n for n in os.listdir(results) if n.endswith("-r3.jsonl")]
        check(refused.returncode != 0 and "9 tests but 8 contexts" in refused.stderr and not left,
              "a context short: refused, nothing written", refused.stdout + refused.stderr)


if __name__ == "__main__":
    main()
