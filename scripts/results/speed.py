"""The llama-bench speed tables: ratio of medians to ggml's pools with its paired interval, the
same with each sample's place in its process taken out (pooled, and per session), and the CUDA
graph counts per run."""

import functools
import statistics

from . import markdown, rounds, stats
from .lines import GRAPH_COUNTS
from .stats import BASELINE

KEY_NAMES = ("model", "KV", "test", "depth")
GRAPH_COLUMNS = ("eager", "captures", "instantiations", "updates", "update failures", "launches", "abandoned",
                 "pool synchronizes")


def key_columns(keys, always):
    """the indices of the key's parts a table shows: always those, and any that varies"""
    return sorted(set(always) | set(markdown.varying(keys, KEY_NAMES)))


def others(bench):
    return [c for c in stats.config_order(bench.configs()) if c != BASELINE]


def rotating(bench):
    """ggml's t/s (median and spread) and every configuration's ratio of medians to it"""
    keys = [k for k in sorted(bench.runs, key=rounds.key_order) if BASELINE in bench.runs[k]]
    shown, configs = key_columns(keys, (1, 3)), others(bench)
    rows = []
    for key in keys:
        cell = bench.runs[key]
        med, sp = stats.spread(stats.pooled(cell[BASELINE]))
        ratios = [markdown.interval(*stats.ratio_interval(cell[c], cell[BASELINE])) if c in cell else ""
                  for c in configs]
        rows.append([str(key[i]) for i in shown] + [f"{med:.1f} (±{sp:.0f}%)"] + ratios)
    return markdown.table([KEY_NAMES[i] for i in shown] + [f"{BASELINE} t/s (spread)"] + configs, rows)


@functools.lru_cache(maxsize=None)
def placed(bench):
    """{key: stats.Placed} of the tests whose rounds carry their places (once a Bench: their
    intervals are drawn once)"""
    out = {key: stats.Placed(bench.runs[key], bench.places[key]) for key in bench.places}
    return {key: p for key, p in sorted(out.items(), key=lambda kv: rounds.key_order(kv[0])) if p.usable()}


def places(bench):
    """the ratios with each place's effect taken out, and ggml's own level"""
    tests, configs = placed(bench), others(bench)
    shown = key_columns(list(tests), (1, 3))
    rows = []
    for key, p in tests.items():
        intervals, (_, level) = p.intervals, p.ratios()
        rows.append([str(key[i]) for i in shown] + [f"{level:.3f}"] +
                    [markdown.interval(*intervals[c]) if c in intervals else "" for c in configs])
    return markdown.table([KEY_NAMES[i] for i in shown] + [f"{BASELINE} level"] + configs, rows)


def sessions(benches):
    """the place-adjusted ratios of each session alone; benches: [(label, Bench)]"""
    tests = [(label, key, p) for label, bench in benches for key, p in placed(bench).items()]
    configs = stats.config_order({c for _, bench in benches for c in others(bench)})
    shown = key_columns([key for _, key, _ in tests], (3,))
    rows, last = [], None
    for label, key, p in tests:
        ratios, level = p.ratios()
        head = f"{label} ({len(p.rounds)})" if label != last else ""
        last = label
        rows.append([head] + [str(key[i]) for i in shown] + [f"{level:.3f}"] +
                    [f"{ratios[c]:.3f}" if c in ratios else "" for c in configs])
    return markdown.table(["session (rounds)"] + [KEY_NAMES[i] for i in shown] + [f"{BASELINE} level"] + configs,
                          rows)


def graph_counts(benches):
    """graphs per llama-bench run (every context summed; median over runs) and the pools'
    synchronizes, configurations with the same counts on one row; benches: [(label, Bench)]"""
    rows = []
    for label, bench in benches:
        for (model, kv), per in sorted(bench.graphs.items()):
            depths = sorted({key[3] for key in bench.runs if key[:2] == (model, kv)})
            groups = {}
            for c in stats.config_order(per):
                counts = tuple(int(statistics.median(run[k] for run in per[c])) for k in GRAPH_COUNTS + ("syncs",))
                groups.setdefault(counts, []).append(c)
            for counts, configs in groups.items():
                rows.append([label, model, kv, ", ".join(map(str, depths)), ", ".join(configs)] +
                            [str(n) for n in counts])
    shown = [0] + [i for i in (1, 2) if len({r[i] for r in rows}) > 1] + [3, 4]
    columns = ["session", "model", "KV", "depths", "configuration"]
    return markdown.table([columns[i] for i in shown] + list(GRAPH_COLUMNS),
                          [[r[i] for i in shown] + r[5:] for r in rows])
