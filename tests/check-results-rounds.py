#!/usr/bin/env python3
"""scripts/results/ on made-up llama-bench rounds. A rotating round (three configurations taking
turns over the contexts of one process, two depths each, the depths varying fastest as llama.sh
orders them) split by `results.py split`: every configuration gets its own tests (each depth once,
its own samples, its context's place in the process) and its own contexts' lines, numbered from 1,
and the speed table reads the split rounds as any; refused, leaving nothing behind: tests and
contexts that do not pair up, a test following one of its own depth (llama-bench reuses that
one's prefill), configurations that ran different tests. Rounds split before places were kept get
them from llama.sh's layout (round R takes the configurations rotated by R - 1, context k runs
depth k mod 2 for the configuration at k mod 3), checked against a round's unsplit file: the
configurations in another order are refused there, so is a configuration the layout lacks.
Sessions pooled: the second session's rounds follow the first's, each with its own samples and
places, so rounds of different sessions never pair.

    check-results-rounds.py SCRIPTS_DIR
"""

import json
import os
import subprocess
import sys
import tempfile

from results_check import cells, check, folder
from results import rounds, source, speed  # noqa: E402  (results_check puts it on the path)

CONFIGS = ("ggml", "legacy", "vmm")  # the rotation, in its order
DEPTHS = (0, 4096)  # 2 and 3 share no factor
PREFIX = "bench-1b-q8_0-f16"


def speed_of(config, depth):
    """a made-up t/s that names its configuration and depth"""
    return 700.0 - depth / 1000 + CONFIGS.index(config)


def rotated():
    """context k runs depth k mod 2 for configuration k mod 3: tg128 at each depth, once each"""
    return [(CONFIGS[k % 3], 0, 128, DEPTHS[k % 2]) for k in range(6)]


def write_run(results, rnd, contexts, drop_graphs_of=None):
    """rotate/PREFIX-rROUND.jsonl and .stats; contexts: (config, n_prompt, n_gen, depth), one test each"""
    tests, stats = [], []
    for session, (config, n_prompt, n_gen, depth) in enumerate(contexts, 1):
        tests.append(json.dumps({"n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
                                 "samples_ts": [speed_of(config, depth)] * 3}) + "\n")
        stats.append(f"ggml-cuda-pool stats: session={session} device=0 slot=0 pool={config} allocs={session} "
                     "hits=1 syncs=0\n")
        if session != drop_graphs_of:
            stats.append(f"ggml-cuda-pool graphs: session={session} eager=1 captures=1 instantiations=1 "
                         f"updates=1 update_failures=0 launches=128 abandoned=0 config={config}\n")
    os.makedirs(os.path.join(results, "rotate"), exist_ok=True)
    for ext, lines in (("jsonl", tests), ("stats", stats)):
        with open(os.path.join(results, "rotate", f"{PREFIX}-r{rnd}.{ext}"), "w") as f:
            f.writelines(lines)


def split(results, rnd):
    return subprocess.run([sys.executable, os.path.join(sys.argv[1], "results.py"), "split", results, PREFIX,
                           str(rnd)], capture_output=True, text=True)


def refused(results, rnd, contexts, why, **kw):
    write_run(results, rnd, contexts, **kw)
    done = split(results, rnd)
    left = [n for n in os.listdir(results) if n.endswith(f"-r{rnd}.jsonl")]
    check(done.returncode != 0 and why in done.stderr and not left, f"split refused, nothing written: {why}",
          done.stdout + done.stderr)


def check_split(results):
    for rnd in (1, 2):
        write_run(results, rnd, rotated())
        done = split(results, rnd)
        check(done.returncode == 0, f"round {rnd} split", done.stdout + done.stderr)
    for config in CONFIGS:
        with open(os.path.join(results, f"{PREFIX}-{config}-r1.jsonl")) as f:
            tests = [json.loads(line) for line in f]
        got = sorted((t["n_depth"], t["samples_ts"][0]) for t in tests)
        check(got == [(d, speed_of(config, d)) for d in DEPTHS], f"{config}: its own test at every depth: {got}", "")
        own = [k for k, c in enumerate(rotated()) if c[0] == config]
        places = [t.get(rounds.POSITION) for t in tests]
        check(places == own, f"{config}: each test's place in the process, {own}: {places}", "")
        with open(os.path.join(results, f"{PREFIX}-{config}-r1.stats")) as f:
            stats = f.read()
        allocs = [int(p.split("=")[1]) for p in stats.split() if p.startswith("allocs=")]
        sessions = [int(p.split("=")[1]) for p in stats.split() if p.startswith("context=")]
        check(allocs == [k + 1 for k in own] and sessions == [1, 1, 2, 2], f"{config}: its own contexts' lines "
              f"(allocs {allocs}), numbered from 1: {sessions}", stats)
    table = speed.rotating(rounds.read(source.open_folder(results)))
    row = cells(table, "f16")  # depth 0
    check(row.get("legacy", "").startswith("1.001") and row.get("vmm", "").startswith("1.003"),
          "the speed table reads the split rounds: legacy and vmm 1 and 2 t/s above ggml's 700", table)
    refused(results, 3, rotated(), "6 tests but 5 contexts", drop_graphs_of=4)
    refused(results, 4, [(CONFIGS[k % 3], 0, 128, DEPTHS[k // 3]) for k in range(6)], "tests 4 and 5 share depth 4096")
    refused(results, 5, [(CONFIGS[k % 2], 512 if k % 2 else 0, 0 if k % 2 else 128, 0) for k in range(4)],
            "the configurations ran different tests")


def unplaced(with_unsplit=4):
    """rounds 1-4 split without places, round with_unsplit's unsplit file kept; {(config, round): places}"""
    files, want = {}, {}
    for rnd in (1, 2, 3, 4):
        order = [CONFIGS[(i + rnd - 1) % 3] for i in range(3)]
        contexts = [(order[k % 3], DEPTHS[k % 2]) for k in range(6)]
        line = {k: json.dumps({"n_prompt": 0, "n_gen": 128, "n_depth": d, "samples_ts": [700.0 + rnd + k / 10] * 3})
                for k, (_, d) in enumerate(contexts)}
        for config in CONFIGS:
            want[(config, rnd)] = [k for k, (c, _) in enumerate(contexts) if c == config]
            files[f"{PREFIX}-{config}-r{rnd}.jsonl"] = "".join(line[k] + "\n" for k in want[(config, rnd)])
        if rnd == with_unsplit:
            files[f"rotate/{PREFIX}-r{rnd}.jsonl"] = "".join(line[k] + "\n" for k in range(6))
    return files, want


def check_places():
    files, want = unplaced()
    bench = rounds.read(folder(files), rounds.Layout(CONFIGS, DEPTHS))
    got = {(c, r): sorted(bench.places[("1b-q8_0", "f16", "tg128", d)][c][r] for d in DEPTHS)
           for c, r in want}
    check(got == want, f"every test at its place from llama.sh's layout: {got}", "")
    for configs, why in ((("legacy", "ggml", "vmm"), f"rotate/{PREFIX}-r4.jsonl"),
                         (("ggml", "legacy", "plain"), "vmm is not in")):
        try:
            rounds.read(folder(files), rounds.Layout(configs, DEPTHS))
            error = ""
        except ValueError as e:
            error = str(e)
        check(why in error, f"a layout of {configs}: refused ({why})", error)


def check_pool():
    files, _ = unplaced()
    a = rounds.read(folder(files), rounds.Layout(CONFIGS, DEPTHS))
    b = rounds.read(folder({n: t.replace('"samples_ts": [70', '"samples_ts": [80') for n, t in files.items()}),
                    rounds.Layout(CONFIGS, DEPTHS))
    pooled = rounds.pool([a, b])
    key = ("1b-q8_0", "f16", "tg128", 0)
    got = {r: s[0] for r, s in sorted(pooled.runs[key]["ggml"].items())}
    check(sorted(got) == list(range(1, 9)) and all(got[r] < 800 for r in range(1, 5)) and
          all(got[r] >= 800 for r in range(5, 9)), f"the second session's rounds follow the first's: {got}", "")
    check(all(pooled.places[key][c][r + 4] == a.places[key][c][r] for c in CONFIGS for r in range(1, 5)),
          "each pooled round keeps its places", "")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        check_split(tmp)
    check_places()
    check_pool()
