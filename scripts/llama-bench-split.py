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

    llama-bench-split.py --places RESULTS "CONFIGS" [DEPTHS]

gives the tests of rounds split before their places were kept the place each ran at, from the
layout scripts/llama.sh gives a rotating round: round R takes the configurations in the order
CONFIGS rotated by R - 1 (round_order), and context k runs depth k mod D of DEPTHS for the
configuration at k mod C. CONFIGS as llama.sh ran them ("ggml legacy plain vmm async"), DEPTHS
as llama-bench got them ("0,4096,32768"). Run it on one session's own folder, before pooling
(llama-results-merge.py renumbers rounds). Where a round's unsplit file is there, every placed
test must match its line there; tests that carry their place are left as they are. Exits 1,
writing nothing, when CONFIGS and DEPTHS are no rotating round's (their numbers share a factor),
a round file's configuration is not in CONFIGS, a test's depth is not in DEPTHS, a
configuration ran a depth twice in a round, or a placed test differs from its unsplit line.
"""
import importlib.util
import json
import math
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


def read_tests(path):
    """a JSONL file's tests, parsed"""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def with_place(test, position, summary):
    """a test's JSONL line carrying its context's place in the process, which moves t/s by itself
    (llama-summary.py)"""
    return json.dumps({**test, summary.POSITION: position}) + "\n"


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
        out[configs[session]][0].append(with_place(json.loads(test), position, summary))
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


def place(configs, depths, config, rnd, depth):
    """the context index k < C * D with k mod C the configuration's slot in round rnd's order and
    k mod D its depth's index (one k: C and D share no factor, as llama.sh requires)"""
    slot = (configs.index(config) - (rnd - 1)) % len(configs)
    return next(k for k in range(len(configs) * len(depths))
                if k % len(configs) == slot and k % len(depths) == depths.index(depth))


def placed(results, configs, depths, summary):
    """{path: new lines} for the round files lacking places, or an error message"""
    out, unsplit_tests = {}, {}  # unsplit path -> its tests (None: not kept), read once for every configuration
    for name in sorted(os.listdir(results)):
        m = summary.BENCH_FILE.match(name)
        if not m:
            continue
        model, kv, config, rnd = m.group(1), m.group(2), m.group(3), int(m.group(4))
        tests = read_tests(os.path.join(results, name))
        if all(summary.POSITION in t for t in tests):
            continue
        if config not in configs:
            return None, f"{name}: {config} is not in CONFIGS"
        unsplit = os.path.join(results, "rotate", f"bench-{model}-{kv}-r{rnd}.jsonl")
        if unsplit not in unsplit_tests:
            unsplit_tests[unsplit] = read_tests(unsplit) if os.path.exists(unsplit) else None
        raw = unsplit_tests[unsplit]
        lines, seen = [], set()
        for t in tests:
            if t["n_depth"] not in depths:
                return None, f"{name}: depth {t['n_depth']} is not in DEPTHS"
            k = place(configs, depths, config, rnd, t["n_depth"])
            if k in seen:
                return None, f"{name}: depth {t['n_depth']} twice"
            seen.add(k)
            if raw is not None and (k >= len(raw) or raw[k]["samples_ts"] != t["samples_ts"]):
                return None, f"{name}: its depth-{t['n_depth']} test is not line {k + 1} of {unsplit}"
            lines.append(with_place(t, k, summary))
        out[os.path.join(results, name)] = lines
    return out, None


def write(path, lines):
    """whole or not at all: a file cut short would count as a finished round"""
    with open(path + ".part", "w") as f:
        f.writelines(lines)
    os.replace(path + ".part", path)


def main_places(args):
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    results, configs = args[0], args[1].split()
    depths = [int(d) for d in (args[2] if len(args) == 3 else "0,4096,32768").split(",")]
    if math.gcd(len(configs), len(depths)) != 1:
        sys.exit(f"llama-bench-split: {len(configs)} configurations and {len(depths)} depths share a factor: "
                 "llama.sh runs no rotating round so")
    files, error = placed(results, configs, depths, load_summary())
    if error:
        sys.exit(f"llama-bench-split: {error}")
    for path, lines in files.items():
        write(path, lines)
    print(f"llama-bench-split: {len(files)} round files placed")


def main():
    if sys.argv[1:2] == ["--places"]:
        return main_places(sys.argv[2:])
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
