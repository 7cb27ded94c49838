"""llama-bench rounds of one or more sessions: each configuration's samples per round and test,
each test's place in its process (rotating rounds), each run's graph counts.

A round file is bench-MODEL-KV-CONFIG-rROUND.jsonl (and .stats) as scripts/llama.sh leaves it:
one llama-bench run, or one configuration's share of a rotating round (scripts/results.py split).
Rounds of several sessions pool with their rounds renumbered, each session's after the previous
one's, so a round keeps its configurations together and rounds of different sessions never pair."""

import math
from collections import defaultdict

from . import lines

BENCH_FILE = r"bench-(.+)-(f16|q8_0|q4_0|bf16)-(.+)-r(\d+)\.jsonl"
# a rotating round's test: its context's index in the process, from 0
POSITION = "process_position"


def test_name(t):
    return f"pp{t['n_prompt']}" if t["n_prompt"] else f"tg{t['n_gen']}"


class Layout:
    """The order scripts/llama.sh gives a rotating round: round R takes the configurations in the
    order CONFIGS rotated by R - 1, and context k runs depth k mod D for the configuration at
    k mod C (C and D share no factor, so every configuration runs every depth once)."""

    def __init__(self, configs, depths):
        self.configs, self.depths = list(configs), list(depths)
        if math.gcd(len(self.configs), len(self.depths)) != 1:
            raise ValueError(f"{len(self.configs)} configurations and {len(self.depths)} depths share a factor: "
                             "llama.sh runs no rotating round so")

    def place(self, config, rnd, depth):
        slot = (self.configs.index(config) - (rnd - 1)) % len(self.configs)
        return next(k for k in range(len(self.configs) * len(self.depths))
                    if k % len(self.configs) == slot and k % len(self.depths) == self.depths.index(depth))


def placed_tests(folder, name, config, rnd, tests, layout):
    """the tests of a round file split before places were kept, each given its place from the
    layout and checked against the round's unsplit file (rotate/) where the folder has it"""
    if config not in layout.configs:
        raise ValueError(f"{folder.label}/{name}: {config} is not in the layout's configurations")
    unsplit = "rotate/" + name.replace(f"-{config}-r", "-r")
    raw = folder.json_lines(unsplit) if folder.has(unsplit) else None
    out, seen = [], set()
    for t in tests:
        if t["n_depth"] not in layout.depths:
            raise ValueError(f"{folder.label}/{name}: depth {t['n_depth']} is not in the layout's depths")
        k = layout.place(config, rnd, t["n_depth"])
        if k in seen:
            raise ValueError(f"{folder.label}/{name}: depth {t['n_depth']} twice")
        seen.add(k)
        if raw is not None and (k >= len(raw) or raw[k]["samples_ts"] != t["samples_ts"]):
            raise ValueError(f"{folder.label}/{name}: its depth-{t['n_depth']} test is not line {k + 1} of {unsplit}")
        out.append({**t, POSITION: k})
    return out


class Bench:
    """runs: {(model, kv, test, depth): {config: {round: samples}}}; places: the same keys ->
    {config: {round: place}}; graphs: {(model, kv): {config: [graph counts of each run]}}"""

    def __init__(self):
        self.runs = defaultdict(dict)
        self.places = defaultdict(lambda: defaultdict(dict))
        self.graphs = defaultdict(lambda: defaultdict(list))

    def last_round(self):
        return max((r for cell in self.runs.values() for by_round in cell.values() for r in by_round), default=0)

    def add(self, key, config, rnd, test):
        self.runs[key].setdefault(config, defaultdict(list))[rnd].extend(test["samples_ts"])
        if POSITION in test:
            self.places[key][config][rnd] = test[POSITION]

    def configs(self):
        return {c for cell in self.runs.values() for c in cell}


def read(folder, layout=None):
    """a folder's rounds; layout places the tests of rounds split before places were kept"""
    bench = Bench()
    for name, m in folder.match(BENCH_FILE):
        model, kv, config, rnd = m.group(1), m.group(2), m.group(3), int(m.group(4))
        stats = folder.text(name[:-len(".jsonl")] + ".stats")
        bench.graphs[(model, kv)][config].append(lines.graph_counts(stats))
        tests = folder.json_lines(name)
        if layout is not None and not all(POSITION in t for t in tests):
            tests = placed_tests(folder, name, config, rnd, tests, layout)
        for t in tests:
            bench.add((model, kv, test_name(t), t["n_depth"]), config, rnd, t)
    return bench


def pool(benches):
    """one Bench of several sessions' rounds, each session's renumbered after the previous one's"""
    out, offset = Bench(), 0
    for bench in benches:
        for key, cell in bench.runs.items():
            for config, by_round in cell.items():
                for rnd, samples in sorted(by_round.items()):
                    test = {"samples_ts": samples}
                    if rnd in bench.places[key].get(config, {}):
                        test[POSITION] = bench.places[key][config][rnd]
                    out.add(key, config, rnd + offset, test)
        offset = max(offset, out.last_round())
    return out


def key_order(key):
    """(model, kv, test, depth) in table order: the depth as a number"""
    return key[0], key[1], key[2], int(key[3])
