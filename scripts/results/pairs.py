"""Time inside the pools per alloc+free pair (call_ms over allocations, every pool of a run summed)
for each configuration, in llama-server's unconstrained runs (serve-rR/serve-CONFIG-free.stats) and
in graphs-off llama-bench (pairs-CONFIG-rR.stats), each round's figure and the median's ratio to
ggml's pools."""

import re
import statistics

from . import lines, markdown

CONFIGS = ("ggml", "vmm", "legacy", "plain", "async", "async-declared")
BASELINE = "ggml"
SOURCES = (("llama-server", r"serve-r(\d+)/serve-{c}-free\.stats"), ("graphs-off llama-bench", r"pairs-{c}-r(\d+)\.stats"))


def per_pair(text):
    kvs = lines.pool_lines(text)
    allocs = lines.total(kvs, "allocs")
    return lines.total(kvs, "call_ms") * 1e6 / allocs if allocs else None


def rounds(folder, pattern, config):
    """ns per pair of each round, in round order"""
    found = sorted((int(m.group(1)), name) for name, m in folder.match(pattern.format(c=re.escape(config))))
    return [x for x in (per_pair(folder.text(name)) for _, name in found) if x is not None]


def table(folder):
    rows = []
    for where, pattern in SOURCES:
        base = rounds(folder, pattern, BASELINE)
        for config in CONFIGS:
            ns = rounds(folder, pattern, config)
            if not ns:
                continue
            ratio = statistics.median(ns) / statistics.median(base) if base else None
            rows.append([where, config, str(len(ns)), " / ".join(f"{x:.0f}" for x in ns),
                         f"{statistics.median(ns):.0f}", f"{ratio:.2f}x" if ratio else "-"])
    return markdown.table(["run", "configuration", "rounds", "ns per pair, each round", "median",
                           f"median / {BASELINE}'s"], rows)
