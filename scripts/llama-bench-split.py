#!/usr/bin/env python3
"""One llama-bench process, many configurations: splits its results by configuration.

With GGML_CUDA_POOL_ROTATE, the backend contexts of one process take the listed configurations
in turn, and llama-bench makes one llama context (one backend context) per test, in the order
of its JSONL lines. So the k-th JSONL line belongs to the k-th context, whose graphs line names
its configuration (config=). Each configuration gets the files a process of its own would have
left: PREFIX-CONFIG-rROUND.jsonl (its tests) and .stats (its contexts' lines, the contexts
numbered from 1 in their order), which scripts/llama-summary.py reads as it reads any round.

    llama-bench-split.py RESULTS PREFIX ROUND

reads RESULTS/rotate/PREFIX-rROUND.jsonl and .stats (a folder of their own, which the summary
does not read); exits 1, writing nothing, when the tests and the contexts do not pair up.
"""
import importlib.util
import os
import re
import sys
from collections import defaultdict


def load_summary():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama-summary.py")
    spec = importlib.util.spec_from_file_location("llama_summary", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def split(results, prefix, rnd):
    """{config: (jsonl lines, stats lines)}, or an error message"""
    summary = load_summary()
    base = os.path.join(results, "rotate", f"{prefix}-r{rnd}")
    with open(base + ".jsonl") as f:
        tests = [line for line in f if line.strip()]
    with open(base + ".stats") as f:
        lines = f.read().splitlines()
    configs = {}  # session -> config
    for session, kvs in summary.stats_lines(base + ".stats", summary.GRAPHS).items():
        if "config" not in kvs[0]:
            return None, f"{base}.stats: session {session}'s graphs line names no config"
        configs[session] = kvs[0]["config"]
    sessions = sorted(configs)
    if len(sessions) != len(tests):
        return None, f"{base}: {len(tests)} tests but {len(sessions)} contexts"
    out = defaultdict(lambda: ([], []))
    renumbered = {}  # session -> its number among its configuration's contexts
    for session, test in zip(sessions, tests):
        out[configs[session]][0].append(test)
        renumbered[session] = len(out[configs[session]][0])
    for line in lines:
        m = re.search(r"^(ggml-cuda-pool (?:stats|graphs): session=)(\d+)( .*)$", line)
        if m:
            session = int(m.group(2))
            out[configs[session]][1].append(f"{m.group(1)}{renumbered[session]}{m.group(3)}\n")
    counts = {len(t) for t, _ in out.values()}
    if len(counts) != 1:
        return None, f"{base}: the configurations ran different numbers of tests: " + \
            ", ".join(f"{c} {len(t)}" for c, (t, _) in sorted(out.items()))
    return dict(out), None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    results, prefix, rnd = sys.argv[1:]
    by_config, error = split(results, prefix, rnd)
    if error:
        sys.exit(f"llama-bench-split: {error}")
    for config, (tests, stats) in sorted(by_config.items()):
        base = os.path.join(results, f"{prefix}-{config}-r{rnd}")
        with open(base + ".stats", "w") as f:
            f.writelines(stats)
        with open(base + ".jsonl", "w") as f:  # last: its presence marks the round done
            f.writelines(tests)
        print(f"{config}: {len(tests)} tests")


if __name__ == "__main__":
    main()
