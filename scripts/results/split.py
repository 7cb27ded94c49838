"""One llama-bench process, many configurations: a rotating round split by configuration.

With GGML_CUDA_POOL_ROTATE the backend contexts of one process take the configurations in turn,
and llama-bench makes one context per test, in the order of its JSONL lines: the k-th line
belongs to the k-th context, whose graphs line names its configuration (config=). Each
configuration gets the files a process of its own would have left, RESULTS/PREFIX-CONFIG-rROUND
.jsonl (its tests, each with its context's place in the process) and .stats (its contexts'
lines, the contexts numbered from 1 in their order), from RESULTS/rotate/PREFIX-rROUND.jsonl
and .stats. Nothing is written when the tests and the contexts do not pair up, when the
configurations ran different tests, or when a test followed one of its own depth (llama-bench
then reuses the earlier test's prefill, another configuration's)."""

import json
import os
import re
import sys
from collections import defaultdict

from . import lines
from .rounds import POSITION


def test_key(t):
    return t["n_prompt"], t["n_gen"], t["n_depth"]


def contexts(base, stats):
    """{context: config} from the graphs lines, or an error message"""
    configs = {}
    for context, kvs in lines.by_context(stats, lines.GRAPHS).items():
        if "config" not in kvs[0]:
            return None, f"{base}.stats: context {context}'s graphs line names no config"
        configs[context] = kvs[0]["config"]
    return configs, None


def split(results, prefix, rnd):
    """{config: (jsonl lines, stats lines)}, or an error message"""
    base = os.path.join(results, "rotate", f"{prefix}-r{rnd}")
    with open(base + ".jsonl") as f:
        tests = [json.loads(line) for line in f if line.strip()]
    with open(base + ".stats") as f:
        stats = f.read()
    configs, error = contexts(base, stats)
    if error:
        return None, error
    if len(configs) != len(tests):
        return None, f"{base}: {len(tests)} tests but {len(configs)} contexts"
    keys = [test_key(t) for t in tests]
    for k in range(1, len(keys)):
        if keys[k][2] > 0 and keys[k][2] == keys[k - 1][2]:
            return None, f"{base}: tests {k} and {k + 1} share depth {keys[k][2]}: llama-bench reused the first's " \
                "prefill for the second, another configuration's"
    out = defaultdict(lambda: ([], []))
    renumbered = {}  # context -> its number among its configuration's contexts
    for position, (context, test) in enumerate(zip(sorted(configs), tests)):
        out[configs[context]][0].append(json.dumps({**test, POSITION: position}) + "\n")
        renumbered[context] = len(out[configs[context]][0])
    ran = {c: sorted(test_key(json.loads(t)) for t in ts) for c, (ts, _) in out.items()}
    if len({tuple(r) for r in ran.values()}) != 1:
        return None, f"{base}: the configurations ran different tests: " + \
            "; ".join(f"{c} {r}" for c, r in sorted(ran.items()))
    for line in stats.splitlines(keepends=True):
        kv = lines.fields(line) or lines.fields(line, lines.GRAPHS)
        if not kv:
            continue
        context = int(kv["context"])
        if context not in renumbered:
            return None, f"{base}.stats: context {context} has lines but no graphs line"
        out[configs[context]][1].append(re.sub(r"\b(session|context)=\d+", f"context={renumbered[context]}", line,
                                               count=1))
    return dict(out), None


def write(path, lines_):
    """whole or not at all: a file cut short would count as a finished round"""
    with open(path + ".part", "w") as f:
        f.writelines(lines_)
    os.replace(path + ".part", path)


def main(results, prefix, rnd):
    """splits the round; returns the exit status"""
    by_config, error = split(results, prefix, rnd)
    if error:
        print(f"results.py split: {error}", file=sys.stderr)
        return 1
    for config, (tests, stats) in sorted(by_config.items()):
        base = os.path.join(results, f"{prefix}-{config}-r{rnd}")
        write(base + ".stats", stats)
        write(base + ".jsonl", tests)  # last: its presence marks the round done
        print(f"{config}: {len(tests)} tests")
    return 0
