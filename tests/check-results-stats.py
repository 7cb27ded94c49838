#!/usr/bin/env python3
"""scripts/results/'s statistics on made-up results. llama-bench and speculative runs interleaved
round by round, every round's speed drifting by up to 12% for all configurations alike (as on a
shared GPU machine), 0.5% of noise within a round: the paired interval must keep the drift out,
contain 1 for a configuration as fast as ggml's pools, be narrow, and exclude 1 for one 3% slower
(which an interval resampling each sample on its own cannot tell from drift); a round only ggml's
pools ran must not move a ratio. Rotating rounds whose t/s moves by 6% with a context's place in
the process: with that place's effect taken out the interval is narrower than with it in, still
contains 1 for a configuration as fast as ggml's and excludes it for one 3% slower, and ggml's
own level is its samples over their places' means. The speculative table sums each run's pool
allocations and time in pool calls over its stats lines (a context each), "-" where the lines
carry no time. A run under memory pressure says why it ended: the pool's refusal, or the error
ggml's CUDA_CHECK reports (an illegal memory access that a synchronize reports is no out of
memory), or its pools' peak and flushes.

    check-results-stats.py SCRIPTS_DIR
"""

import json
import random
import statistics
from collections import defaultdict

from results_check import cells, check, folder, interval
from results import pressure, rounds, speculative, speed  # noqa: E402  (results_check puts it on the path)

DRIFT = (1.00, 0.88, 1.10, 0.92, 1.05, 0.90, 1.12, 0.95)  # a round's speed, all configurations alike
NOISE = 0.005
REPS = 3
SPEEDS = {"ggml": 1.00, "level": 1.00, "slow": 0.97}  # true speed relative to ggml's pools
BASE_TS = 600.0
SPEC_ALLOCS = (10, 200)  # a run's two contexts
PLACE_EFFECT = (1.06, 1.00, 0.94)  # t/s by a context's place in its process, whatever its configuration
PLACE_NOISE = 0.01


def test_line(samples, **more):
    return json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": 0, "samples_ts": samples, **more}) + "\n"


def call_ms(config, r):
    """the made-up time inside one run's pool calls, per context: none for "slow" (an older line)"""
    return None if config == "slow" else ((r + 1) * 0.5, 1.0)


def spec_files(config, r, ts):
    stats = ""
    for session, allocs in enumerate(SPEC_ALLOCS, 1):
        ms = call_ms(config, r)
        stats += (f"ggml-cuda-pool stats: session={session} device=0 slot=0 pool={config} allocs={allocs} "
                  f"hits={allocs}" + (f" call_ms={ms[session - 1]:.3f}" if ms else "") + "\n")
    return {f"spec-{config}-r{r}.log": f"decoded  192 tokens in   1.500 seconds, speed:  {ts:.3f} t/s\n",
            f"spec-{config}-r{r}.stats": stats}


def drifting():
    rng, files = random.Random(7), {}
    for r, drift in enumerate(DRIFT):
        for config, speed_ in SPEEDS.items():
            samples = [BASE_TS * drift * speed_ * (1 + rng.uniform(-NOISE, NOISE)) for _ in range(REPS)]
            files[f"bench-1b-q8_0-f16-{config}-r{r}.jsonl"] = test_line(samples)
            files.update(spec_files(config, r, samples[0] / 4))
    return files


def rotating():
    """configuration i runs at place (i + r) mod 3 of round r's process; ggml's level: the median
    of its samples, each over the mean of every sample at its place"""
    rng, files = random.Random(11), {}
    at_place, ggml = defaultdict(list), []
    for r, drift in enumerate(DRIFT):
        for i, (config, speed_) in enumerate(SPEEDS.items()):
            place = (i + r) % len(PLACE_EFFECT)
            samples = [BASE_TS * drift * speed_ * PLACE_EFFECT[place] * (1 + rng.uniform(-PLACE_NOISE, PLACE_NOISE))
                       for _ in range(REPS)]
            at_place[place] += samples
            ggml += [(x, place) for x in samples] if config == "ggml" else []
            files[f"bench-1b-q8_0-f16-{config}-r{r}.jsonl"] = test_line(samples, **{rounds.POSITION: place})
    return files, statistics.median(x / statistics.mean(at_place[place]) for x, place in ggml)


def check_drift():
    files = drifting()
    table = speed.rotating(rounds.read(folder(files)))
    level, slow = interval(cells(table, "f16")["level"]), interval(cells(table, "f16")["slow"])
    check(level[1] <= 1.0 <= level[2], f"llama-bench: a configuration as fast as ggml's: {level} contains 1", table)
    check(level[2] - level[1] < 0.02, f"llama-bench: 12% of drift between rounds stays out: {level} narrower "
          "than 0.02", table)
    check(slow[2] < 1.0, f"llama-bench: a configuration 3% slower: {slow} excludes 1", table)
    # a round only ggml's pools ran, far slower than the others: it pairs with nothing
    files[f"bench-1b-q8_0-f16-ggml-r{len(DRIFT)}.jsonl"] = test_line([BASE_TS * 0.6] * REPS)
    alone = interval(cells(speed.rotating(rounds.read(folder(files))), "f16")["level"])
    check(abs(alone[0] - level[0]) < 0.002, f"llama-bench: a round only ggml ran leaves the ratio {level[0]} "
          f"as it was: {alone[0]}", table)
    check(not speed.placed(rounds.read(folder(files))), "llama-bench: no place-adjusted ratios without places", "")


def check_speculative():
    table = speculative.table(folder(drifting()))
    level, slow = interval(cells(table, "level")["ratio to ggml [95% paired interval]"]), \
        interval(cells(table, "slow")["ratio to ggml [95% paired interval]"])
    check(level[1] <= 1.0 <= level[2], f"speculative: as fast as ggml's: {level} contains 1", table)
    check(slow[2] < 1.0, f"speculative: 3% slower: {slow} excludes 1", table)
    row = cells(table, "level")
    sums = sorted(sum(call_ms("level", r)) for r in range(len(DRIFT)))
    want = f"{statistics.median(sums):.1f} ({sums[0]:.1f}-{sums[-1]:.1f})"
    check(row["pool allocs/run"] == str(sum(SPEC_ALLOCS)), "speculative: allocations summed over a run's contexts: "
          f"{row['pool allocs/run']}", table)
    check(row["ms in pool calls/run (min-max)"] == want, f"speculative: time in pool calls summed over a run's "
          f"contexts, {want}: {row['ms in pool calls/run (min-max)']}", table)
    check(cells(table, "slow")["ms in pool calls/run (min-max)"] == "-", "speculative: no time where the lines "
          "carry none", table)


def check_places():
    files, want = rotating()
    bench = rounds.read(folder(files))
    raw = interval(cells(speed.rotating(bench), "f16")["level"])
    table = speed.places(bench)
    got = cells(table, "f16")
    check(abs(float(got["ggml level"]) - want) < 0.0015, f"places out: ggml's level {want:.4f}: {got['ggml level']}",
          table)
    level, slow = interval(got["level"]), interval(got["slow"])
    check(level[1] <= 1.0 <= level[2] and level[2] - level[1] < 0.04,
          f"places out: as fast as ggml's: {level} contains 1, narrower than 0.04", table)
    check(level[2] - level[1] < (raw[2] - raw[1]) / 2, f"places out: {level} at most half as wide as with the "
          f"places in: {raw}", table)
    check(slow[2] < 1.0, f"places out: 3% slower: {slow} excludes 1", table)


# runs under pressure at H = 24: (configuration, its log, its stats, the cell)
PRESSURE = (
    ("ggml", "E CUDA error: out of memory\nE   current device: 0, in function alloc at ggml-cuda.cu:541\nexit 134\n",
     None, "aborted: out of memory in `alloc`"),
    ("async", "E CUDA error: an illegal memory access was encountered\n"
     "E   current device: 0, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2427\nexit 134\n", None,
     "aborted: an illegal memory access was encountered in `ggml_backend_cuda_synchronize`"),
    ("legacy", "adapter.cu:143: ggml-cuda-pool: alloc on device 0 failed (OUT_OF_MEMORY): CUDA pool[0]: alloc of "
     "8.93 MiB failed: out of memory with nothing cached (33.09 MiB live), and 3 retries after a pause did not help\n"
     "exit 134\n", None, "aborted: the pool, 8.93 MiB asked: out of memory with nothing cached (33.09 MiB live)"),
    ("vmm", "exit 0\n", "ggml-cuda-pool stats: session=1 pool=vmm peak_reserved_mib=30.5 flushes=2\n"
     "ggml-cuda-pool stats: session=2 pool=vmm peak_reserved_mib=1.5 flushes=1\n", "ok, 32 MiB, 3 flushes"),
)


def check_pressure():
    files = {}
    for config, log, stats, _ in PRESSURE:
        files[f"growing-{config}-h24.log"] = log
        files.update({f"growing-{config}-h24.stats": stats} if stats else {})
    table = pressure.table([folder(files)])
    for config, _, _, want in PRESSURE:
        got = cells(table, config).get("H = 24")
        check(got == want, f"pressure: {config}'s run says how it ended: {got}", table)


if __name__ == "__main__":
    check_drift()
    check_speculative()
    check_places()
    check_pressure()
