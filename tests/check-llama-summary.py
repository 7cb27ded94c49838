#!/usr/bin/env python3
"""scripts/llama-summary.py's ratio intervals on made-up llama-bench and speculative results: runs
interleaved round by round, every round's speed drifting by up to 12% for all configurations alike
(as on a shared GPU machine), 0.5% of noise within a round. The paired interval must keep the drift
out: it must contain 1 for a configuration as fast as ggml's pools, be narrow, and exclude 1 for one
3% slower (which an interval resampling each sample on its own cannot tell from drift); a round
only ggml's pools ran must not move a ratio. Rotating rounds (one process, its contexts taking the
configurations in turn) whose t/s moves by 6% with a context's place in the process get a second
table with that place's effect taken out: narrower than the first, still containing 1 for a
configuration as fast as ggml's and excluding it for one 3% slower, and giving ggml's own level
(its samples over their places' means) that every ratio shares. The
speculative table also sums each run's pool allocations and time in pool calls over its stats
lines (a context each), and says "-" where the lines carry no time. A run under memory pressure
that ggml's CUDA_CHECK ended says which error, not only where it was checked: an illegal memory
access that a synchronize reports is no out-of-memory.

    check-llama-summary.py PATH/TO/llama-summary.py
"""

import json
import os
import random
import re
import statistics
import sys
import tempfile
from collections import defaultdict

from script_check import captured, check, load_script

DRIFT = (1.00, 0.88, 1.10, 0.92, 1.05, 0.90, 1.12, 0.95)  # a round's speed, all configurations alike
NOISE = 0.005
REPS = 3
SPEEDS = {"ggml": 1.00, "level": 1.00, "slow": 0.97}  # true speed relative to ggml's pools
BASE_TS = 600.0
SPEC_ALLOCS = (10, 200)  # a run's two contexts


def call_ms(config, r):
    """the made-up time inside one run's pool calls, per context: none for "slow" (an older line)"""
    return None if config == "slow" else ((r + 1) * 0.5, 1.0)


def write_results(results):
    rng = random.Random(7)
    for r, drift in enumerate(DRIFT):
        for config, speed in SPEEDS.items():
            samples = [BASE_TS * drift * speed * (1 + rng.uniform(-NOISE, NOISE)) for _ in range(REPS)]
            with open(os.path.join(results, f"bench-1b-q8_0-f16-{config}-r{r}.jsonl"), "w") as f:
                f.write(json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": 0, "samples_ts": samples}) + "\n")
            with open(os.path.join(results, f"spec-{config}-r{r}.log"), "w") as f:
                f.write(f"decoded  192 tokens in   1.500 seconds, speed:  {samples[0] / 4:.3f} t/s\n"
                        "accept    = 9.272%\n")
            with open(os.path.join(results, f"spec-{config}-r{r}.stats"), "w") as f:
                for session, allocs in enumerate(SPEC_ALLOCS, 1):
                    ms = call_ms(config, r)
                    f.write(f"ggml-cuda-pool stats: session={session} device=0 slot=0 pool={config} allocs={allocs} "
                            f"hits={allocs}" + (f" call_ms={ms[session - 1]:.3f}" if ms else "") + "\n")


PLACE_EFFECT = (1.06, 1.00, 0.94)  # t/s by a context's place in its process, whatever its configuration
PLACE_NOISE = 0.01


def write_rotating(results, position):
    """rotating rounds: configuration i runs at place (i + r) mod 3 of round r's process (the
    test line's field named position); returns ggml's level: the median of its samples, each
    over the mean of every sample at its place"""
    rng = random.Random(11)
    at_place, ggml = defaultdict(list), []
    for r, drift in enumerate(DRIFT):
        for i, (config, speed) in enumerate(SPEEDS.items()):
            place = (i + r) % len(PLACE_EFFECT)
            samples = [BASE_TS * drift * speed * PLACE_EFFECT[place] * (1 + rng.uniform(-PLACE_NOISE, PLACE_NOISE))
                       for _ in range(REPS)]
            at_place[place] += samples
            ggml += [(x, place) for x in samples] if config == "ggml" else []
            with open(os.path.join(results, f"bench-1b-q8_0-f16-{config}-r{r}.jsonl"), "w") as f:
                f.write(json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": 0, "samples_ts": samples,
                                    position: place}) + "\n")
    return statistics.median(x / statistics.mean(at_place[place]) for x, place in ggml)


# runs under pressure that ggml's CUDA_CHECK ended: (configuration, its log's last lines, the cell)
ABORTS = (
    ("ggml", "E CUDA error: out of memory\nE   current device: 0, in function alloc at ggml-cuda.cu:541\n",
     "aborted: out of memory in alloc"),
    ("async", "E CUDA error: an illegal memory access was encountered\n"
     "E   current device: 0, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2427\n",
     "aborted: an illegal memory access was encountered in ggml_backend_cuda_synchronize"),
)


def write_pressure(results):
    with open(os.path.join(results, "growing-fixed.txt"), "w") as f:
        f.write("idle_mib 0 total_mib 143771 peak_mib 10731 pools_mib 69 fixed_mib 10662\n")
    for config, tail, _ in ABORTS:
        with open(os.path.join(results, f"growing-{config}-h24.log"), "w") as f:
            f.write(tail + "exit 134\n")


def cells(output, row_start):
    """{column: cell} of the first table row starting with row_start, by the first header"""
    lines = output.splitlines()
    header = next(l for l in lines if l.startswith("| model |") or l.startswith("| configuration |"))
    row = next(l for l in lines if l.startswith(row_start))
    return dict(zip([h.strip() for h in header.split("|")], [c.strip() for c in row.split("|")]))


def interval(output, config, row_start):
    """(ratio, low, high) of a configuration (None: the only one) in the first table row starting
    with row_start"""
    row = cells(output, row_start)
    m = re.search(r"([\d.]+)x \[([\d.]+), ([\d.]+)\]", row[config] if config else " | ".join(row.values()))
    return tuple(float(x) for x in m.groups())


def main():
    summary = load_script(sys.argv[1], "llama_summary")
    with tempfile.TemporaryDirectory() as results:
        write_results(results)
        _, bench = captured(summary.bench, results)
        level = interval(bench, "level", "| 1b-q8_0 |")
        slow = interval(bench, "slow", "| 1b-q8_0 |")
        check(level[1] <= 1.0 <= level[2], f"llama-bench: a configuration as fast as ggml's: {level} contains 1", bench)
        check(level[2] - level[1] < 0.02, f"llama-bench: 12% of drift between rounds stays out: {level} narrower "
              "than 0.02", bench)
        check(slow[2] < 1.0, f"llama-bench: a configuration 3% slower: {slow} excludes 1", bench)

        # a round only ggml's pools ran, far slower than the others: it pairs with nothing, so the
        # ratio must not move (of all samples, the median of ggml's would fall by a drift step)
        with open(os.path.join(results, f"bench-1b-q8_0-f16-ggml-r{len(DRIFT)}.jsonl"), "w") as f:
            f.write(json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": 0, "samples_ts": [BASE_TS * 0.6] * REPS}) + "\n")
        _, bench = captured(summary.bench, results)
        alone = interval(bench, "level", "| 1b-q8_0 |")
        check(abs(alone[0] - level[0]) < 0.002, f"llama-bench: a round only ggml ran leaves the ratio {level[0]} "
              f"as it was: {alone[0]}", bench)
        os.remove(os.path.join(results, f"bench-1b-q8_0-f16-ggml-r{len(DRIFT)}.jsonl"))

        check("rotating rounds" not in bench, "llama-bench: no place-adjusted table without places", bench)

        _, spec = captured(summary.speculative, results)
        level = interval(spec, None, "| level |")
        slow = interval(spec, None, "| slow |")
        check(level[1] <= 1.0 <= level[2], f"speculative: as fast as ggml's: {level} contains 1", spec)
        check(slow[2] < 1.0, f"speculative: 3% slower: {slow} excludes 1", spec)

        row = cells(spec, "| level |")
        want = sorted(sum(call_ms("level", r)) for r in range(len(DRIFT)))
        median = (want[len(want) // 2 - 1] + want[len(want) // 2]) / 2
        got = re.match(r"([\d.]+) \(([\d.]+)-([\d.]+)\)", row["ms in pool calls/run"])
        check(row["pool allocs/run"] == str(sum(SPEC_ALLOCS)), f"speculative: allocations summed over a run's contexts: "
              f"{row['pool allocs/run']}", spec)
        check(got is not None and abs(float(got.group(1)) - median) < 0.06 and abs(float(got.group(2)) - want[0]) < 0.06
              and abs(float(got.group(3)) - want[-1]) < 0.06,
              f"speculative: time in pool calls summed over a run's contexts, median {median:.2f} ({want[0]}-{want[-1]}): "
              f"{row['ms in pool calls/run']}", spec)
        slow_row = next(l for l in spec.splitlines() if l.startswith("| slow |"))
        check(slow_row.rstrip().endswith("| - |"), "speculative: no time where the lines carry none", spec)

    with tempfile.TemporaryDirectory() as results:
        want = write_rotating(results, summary.POSITION)
        _, bench = captured(summary.bench, results)
        raw = interval(bench, "level", "| 1b-q8_0 |")
        adjusted_table = bench[bench.find("rotating rounds"):]
        check("rotating rounds" in bench, "llama-bench: a table of the rotating rounds with each place's effect out", bench)
        got = cells(adjusted_table, "| 1b-q8_0 |").get("ggml level", "")
        check(re.fullmatch(r"[\d.]+", got) is not None and abs(float(got) - want) < 0.0015,
              f"llama-bench, places out: ggml's level {want:.4f}: {got or 'no column'}", bench)
        level = interval(adjusted_table, "level", "| 1b-q8_0 |")
        slow = interval(adjusted_table, "slow", "| 1b-q8_0 |")
        check(level[1] <= 1.0 <= level[2] and level[2] - level[1] < 0.04,
              f"llama-bench, places out: as fast as ggml's: {level} contains 1, narrower than 0.04", bench)
        check(level[2] - level[1] < (raw[2] - raw[1]) / 2,
              f"llama-bench, places out: {level} at most half as wide as with the places in: {raw}", bench)
        check(slow[2] < 1.0, f"llama-bench, places out: 3% slower: {slow} excludes 1", bench)

    with tempfile.TemporaryDirectory() as results:
        write_pressure(results)
        _, pressure = captured(summary.pressure, results)
        for config, _, want in ABORTS:
            got = cells(pressure, f"| {config} |").get("H = 24")
            check(got == want, f"pressure: {config}'s abort says its error: {got}", pressure)


if __name__ == "__main__":
    main()
