#!/usr/bin/env python3
"""One llama-bench process, many configurations: splits its results by configuration.

With GGML_CUDA_POOL_ROTATE, the backend contexts of one process take the listed configurations
in turn, and llama-bench makes one llama context (one backend context) per test, in the order
of its JSONL lines. So the k-th JSONL line belongs to the k-th context, whose graphs line names
its configuration (config=). Each configuration gets the files a process of its own would have
left: PREFIX-CONFIG-rROUND.jsonl (its tests, each with process_position: its context's place in
the process) and .stats (its contexts' lines, the contexts numbered from 1 in their order), which
scripts/llama-summary.py reads as it reads any round.

    llama-bench-split.py RESULTS PREFIX ROUND

reads RESULTS/rotate/PREFIX-rROUND.jsonl and .stats (a folder of their own, which the summary
does not read); exits 1, writing nothing, when the tests and the contexts do not pair up, when
the configurations ran different tests, or when a test followed one of its own depth (llama-bench
then reuses the earlier test's prefill, another configuration's).
"""
import importlib.util
import json
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


def test_key(line):
    t = json.loads(line)
    return t["n_prompt"], t["n_gen"], t["n_depth"]


def split(results, prefix, rnd):
    """{config: (jsonl lines, stats lines)}, or an error message"""
    summary = load_summary()
    base = os.path.join(results, "rotate", f"{prefix}-r{rnd}")
    with open(base + ".jsonl") as f:
        tests = [line for line in f if line.strip()]
    configs = {}  # session -> config
    for session, kvs in summary.stats_lines(base + ".stats", summary.GRAPHS).items():
        if "config" not in kvs[0]:
            return None, f"{base}.stats: session {session}'s graphs line names no config"
        configs[session] = kvs[0]["config"]
    sessions = sorted(configs)
    if len(sessions) != len(tests):
        return None, f"{base}: {len(tests)} tests but {len(sessions)} contexts"
    keys = [test_key(t) for t in tests]
    for k in range(1, len(keys)):
        if keys[k][2] > 0 and keys[k][2] == keys[k - 1][2]:
            return None, f"{base}: tests {k} and {k + 1} share depth {keys[k][2]}: llama-bench reused the first's " \
                "prefill for the second, another configuration's"
    out = defaultdict(lambda: ([], []))
    renumbered = {}  # session -> its number among its configuration's contexts
    for position, (session, test) in enumerate(zip(sessions, tests)):
        # where the context ran in its process, which moves t/s by itself (llama-summary.py)
        out[configs[session]][0].append(json.dumps({**json.loads(test), summary.POSITION: position}) + "\n")
        renumbered[session] = len(out[configs[session]][0])
    ran = {c: sorted(test_key(t) for t in ts) for c, (ts, _) in out.items()}
    if len({tuple(r) for r in ran.values()}) != 1:
        return None, f"{base}: the configurations ran different tests: " + \
            "; ".join(f"{c} {r}" for c, r in sorted(ran.items()))
    with open(base + ".stats") as f:
        for line in f:
            kv = summary.fields(line) or summary.fields(line, summary.GRAPHS)
            if not kv:
                continue
            session = int(kv["session"])
            if session not in renumbered:
                return None, f"{base}.stats: session {session} has lines but no graphs line"
            out[configs[session]][1].append(re.sub(r"\bsession=\d+", f"session={renumbered[session]}", line, count=1))
    return dict(out), None


def write(path, lines):
    """whole or not at all: a file cut short would count as a finished round"""
    with open(path + ".part", "w") as f:
        f.writelines(lines)
    os.replace(path + ".part", path)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    results, prefix, rnd = sys.argv[1:]
    by_config, error = split(results, prefix, rnd)
    if error:
        sys.exit(f"llama-bench-split: {error}")
    for config, (tests, stats) in sorted(by_config.items()):
        base = os.path.join(results, f"{prefix}-{config}-r{rnd}")
        write(base + ".stats", stats)
        write(base + ".jsonl", tests)  # last: its presence marks the round done
        print(f"{config}: {len(tests)} tests")


if __name__ == "__main__":
    main()
