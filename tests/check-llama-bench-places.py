#!/usr/bin/env python3
"""scripts/llama-bench-split.py --places on made-up rotating rounds split before their places were kept:
three configurations, two depths, four rounds laid out as scripts/llama.sh lays them out (round R
takes the configurations rotated by R - 1, context k runs depth k mod 2 for the configuration at
k mod 3). Every test must get the place it ran at, a second run must place nothing, and with the
configurations named in another order a round whose unsplit file is there must be refused,
nothing written; so must a round file of a configuration not named.

    check-llama-bench-places.py PATH/TO/llama-bench-split.py PATH/TO/llama-summary.py
"""

import json
import os
import subprocess
import sys
import tempfile

from script_check import check, load_script

CONFIGS = ("ggml", "legacy", "vmm")
DEPTHS = (0, 4096)
ROUNDS = (1, 2, 3, 4)
UNSPLIT_ROUND = 4  # the round whose unsplit file (rotate/) is kept
PREFIX = "bench-1b-q8_0-f16"


def layout(rnd):
    """[(config, depth)] of round rnd's contexts, in the process's order"""
    order = [CONFIGS[(i + rnd - 1) % len(CONFIGS)] for i in range(len(CONFIGS))]
    return [(order[k % len(CONFIGS)], DEPTHS[k % len(DEPTHS)]) for k in range(len(CONFIGS) * len(DEPTHS))]


def test_line(rnd, k, depth):
    """a made-up test whose samples name its round and place"""
    return {"n_prompt": 0, "n_gen": 128, "n_depth": depth, "samples_ts": [700.0 + rnd + k / 10] * 3}


def write_rounds(results):
    """the split files, without places, and one round's unsplit file; {(config, round): places}"""
    want = {}
    os.makedirs(os.path.join(results, "rotate"))
    for rnd in ROUNDS:
        contexts = layout(rnd)
        for config in CONFIGS:
            places = [k for k, (c, _) in enumerate(contexts) if c == config]
            want[(config, rnd)] = places
            with open(os.path.join(results, f"{PREFIX}-{config}-r{rnd}.jsonl"), "w") as f:
                f.writelines(json.dumps(test_line(rnd, k, contexts[k][1])) + "\n" for k in places)
        if rnd == UNSPLIT_ROUND:
            with open(os.path.join(results, "rotate", f"{PREFIX}-r{rnd}.jsonl"), "w") as f:
                f.writelines(json.dumps(test_line(rnd, k, d)) + "\n" for k, (_, d) in enumerate(contexts))
    return want


def places_of(results, summary):
    got = {}
    for config in CONFIGS:
        for rnd in ROUNDS:
            with open(os.path.join(results, f"{PREFIX}-{config}-r{rnd}.jsonl")) as f:
                got[(config, rnd)] = [json.loads(line).get(summary.POSITION) for line in f]
    return got


def run(tool, results, configs):
    return subprocess.run([sys.executable, tool, "--places", results, " ".join(configs), ",".join(map(str, DEPTHS))],
                          capture_output=True, text=True)


def main():
    tool, summary_path = sys.argv[1:3]
    summary = load_script(summary_path, "llama_summary")
    with tempfile.TemporaryDirectory() as results:
        want = write_rounds(results)
        done = run(tool, results, CONFIGS)
        got = places_of(results, summary)
        check(done.returncode == 0 and got == want, f"every test at its place: {got}", done.stdout + done.stderr)
        again = run(tool, results, CONFIGS)
        check(again.returncode == 0 and "0 round files placed" in again.stdout, "a second run places nothing",
              again.stdout + again.stderr)

    with tempfile.TemporaryDirectory() as results:
        write_rounds(results)
        swapped = run(tool, results, ("legacy", "ggml", "vmm"))
        unplaced = all(p is None for places in places_of(results, summary).values() for p in places)
        check(swapped.returncode != 0 and f"rotate/{PREFIX}-r{UNSPLIT_ROUND}.jsonl" in swapped.stderr and unplaced,
              "the configurations in another order: refused at the unsplit round, nothing written",
              swapped.stdout + swapped.stderr)
        missing = run(tool, results, ("ggml", "legacy", "plain"))
        check(missing.returncode != 0 and "vmm is not in CONFIGS" in missing.stderr,
              "a round file of a configuration not named: refused", missing.stdout + missing.stderr)


if __name__ == "__main__":
    main()
