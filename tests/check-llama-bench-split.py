#!/usr/bin/env python3
"""scripts/llama-bench-split.py on made-up rotating llama-bench runs: three configurations taking
turns over the contexts of one process, two depths each, the depths varying fastest as llama.sh
orders them. Every configuration must get its own tests (each depth once, with its own samples)
and its own contexts' lines, each test with its context's place in the process, which
llama-summary.py then tables like any round. Refused, leaving nothing behind: a run whose
contexts do not pair up with its tests, one where a test follows another of its depth
(llama-bench reuses that one's prefill), one whose configurations ran different tests.

    check-llama-bench-split.py PATH/TO/llama-bench-split.py PATH/TO/llama-summary.py
"""

import json
import os
import subprocess
import sys
import tempfile

from script_check import captured, check, load_script

CONFIGS = ("ggml", "legacy", "vmm")  # the rotation, in its order
DEPTHS = (0, 4096)  # as llama.sh orders them: the depths vary fastest (2 and 3 share no factor)
PREFIX = "bench-1b-q8_0-f16"


def speed(config, depth):
    """a made-up t/s that names its configuration and depth"""
    return 700.0 - depth / 1000 + CONFIGS.index(config)


def rotated():
    """context k runs depth k mod 2 for configuration k mod 3: tg128 at each depth, once each"""
    n = len(CONFIGS) * len(DEPTHS)
    return [(CONFIGS[k % len(CONFIGS)], 0, 128, DEPTHS[k % len(DEPTHS)]) for k in range(n)]


def write_run(results, rnd, contexts, drop_graphs_of=None):
    """contexts: (config, n_prompt, n_gen, depth) in the process's order, one test each"""
    tests, stats = [], []
    for session, (config, n_prompt, n_gen, depth) in enumerate(contexts, 1):
        tests.append(json.dumps({"n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
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


def refused(split, results, rnd, contexts, why, **kw):
    write_run(results, rnd, contexts, **kw)
    done = run_split(split, results, rnd)
    left = [n for n in os.listdir(results) if n.endswith(f"-r{rnd}.jsonl")]
    check(done.returncode != 0 and why in done.stderr and not left, f"refused, nothing written: {why}",
          done.stdout + done.stderr)


def main():
    split, summary_path = sys.argv[1:3]
    summary = load_script(summary_path, "llama_summary")
    with tempfile.TemporaryDirectory() as results:
        for rnd in (1, 2):
            write_run(results, rnd, rotated())
            done = run_split(split, results, rnd)
            check(done.returncode == 0, f"round {rnd} split", done.stdout + done.stderr)
        for config in CONFIGS:
            with open(os.path.join(results, f"{PREFIX}-{config}-r1.jsonl")) as f:
                tests = [json.loads(line) for line in f]
            got = sorted((t["n_depth"], t["samples_ts"][0]) for t in tests)
            want = [(d, speed(config, d)) for d in DEPTHS]
            check(got == want, f"{config}: its own test at every depth: {got}", "")
            places = [t.get(summary.POSITION) for t in tests]
            own_places = [k for k, c in enumerate(rotated()) if c[0] == config]
            check(places == own_places, f"{config}: each test's place in the process, {own_places}: {places}", "")
            with open(os.path.join(results, f"{PREFIX}-{config}-r1.stats")) as f:
                stats = f.read()
            allocs = [int(part.split("=")[1]) for part in stats.split() if part.startswith("allocs=")]
            sessions = [int(part.split("=")[1]) for part in stats.split() if part.startswith("session=")]
            own = [k + 1 for k, c in enumerate(rotated()) if c[0] == config]
            check(allocs == own and sessions == [1, 1, 2, 2],
                  f"{config}: its own contexts' lines (allocs {allocs}, the process's contexts {own}), numbered "
                  f"from 1: {sessions}", stats)
        _, bench = captured(summary.bench, results)
        row = next((l for l in bench.splitlines() if l.startswith("| 1b-q8_0 | f16 | tg128 | 0 |")), "")
        check(all("n=6" in cell for cell in row.split("|")[5:8]) and "1.001x" in row and "1.003x" in row,
              "llama-summary tables the split rounds: 6 samples a configuration, legacy and vmm 1 and 2 t/s "
              "above ggml's 700", bench)

        refused(split, results, 3, rotated(), "6 tests but 5 contexts", drop_graphs_of=4)
        depth_outer = [(CONFIGS[k % 3], 0, 128, DEPTHS[k // 3]) for k in range(6)]
        refused(split, results, 4, depth_outer, "tests 4 and 5 share depth 4096")
        two_tests = [(CONFIGS[k % 2], 512 if k % 2 else 0, 0 if k % 2 else 128, 0) for k in range(4)]
        refused(split, results, 5, two_tests, "the configurations ran different tests")


if __name__ == "__main__":
    main()
