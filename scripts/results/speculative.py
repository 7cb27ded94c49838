"""Speculative decoding (llama-speculative-simple, a target and a draft context in one process):
decode t/s per configuration over interleaved rounds, the ratio of medians to ggml's pools with
its paired interval, and what each run spent in its pools (spec-CONFIG-rROUND.log and .stats)."""

import re
import statistics
from collections import defaultdict

from . import lines, markdown, stats
from .stats import BASELINE

SPEC_LOG = r"spec-(.+)-r(\d+)\.log"
SPEED = re.compile(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s")
COLUMNS = ("configuration", "runs", "median t/s", "spread", f"ratio to {BASELINE} [95% paired interval]",
           "pool allocs/run", "ms in pool calls/run (min-max)")


def pool_calls(text):
    """a run's pool allocations and the milliseconds inside its pools' calls (None where a line has no
    call_ms), every pool of every context summed"""
    pools = lines.pool_lines(text)
    timed = pools and all("call_ms" in kv for kv in pools)
    return int(lines.total(pools, "allocs")), lines.total(pools, "call_ms") if timed else None


def read(folder):
    """({config: {round: [t/s]}}, {config: [(allocs, ms) of each run with a stats file]})"""
    speeds, calls = defaultdict(dict), defaultdict(list)
    for name, m in folder.match(SPEC_LOG):
        speed = SPEED.search(folder.text(name))
        if not speed:
            continue
        speeds[m.group(1)][int(m.group(2))] = [float(speed.group(1))]
        stats_file = name[:-len(".log")] + ".stats"
        if folder.has(stats_file):
            calls[m.group(1)].append(pool_calls(folder.text(stats_file)))
    return speeds, calls


def row(config, speeds, calls, base):
    ts = stats.pooled(speeds)
    med, sp = stats.spread(ts)
    ratio = markdown.interval(*stats.ratio_interval(speeds, base)) if base and config != BASELINE else "-"
    allocs = ",".join(str(a) for a in sorted({a for a, _ in calls})) or "-"
    ms = [t for _, t in calls if t is not None]
    ms_cell = f"{statistics.median(ms):.1f} ({min(ms):.1f}-{max(ms):.1f})" if ms else "-"
    return [config, str(len(ts)), f"{med:.1f}", f"±{sp:.0f}%", ratio, allocs, ms_cell]


def table(folder):
    speeds, calls = read(folder)
    base = speeds.get(BASELINE)
    return markdown.table(COLUMNS, [row(c, speeds[c], calls[c], base) for c in stats.config_order(speeds)])
