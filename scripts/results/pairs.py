"""Time inside the pools per alloc+free pair (call_ms over allocations, every pool of a run summed)
for each configuration, in llama-server's unconstrained runs (serve-rR/serve-CONFIG-free.stats) and
in graphs-off llama-bench (pairs-CONFIG-rR.stats), each round's figure and the median's ratio to
ggml's pools; each run from the newest session that holds it."""

import re
import statistics

from . import lines, markdown

CONFIGS = ("ggml", "vmm", "legacy", "plain", "async", "async-declared")
BASELINE = "ggml"
SOURCES = (("llama-server", r"serve-r(\d+)/serve-{c}-free\.stats"), ("graphs-off llama-bench", r"pairs-{c}-r(\d+)\.stats"))


def per_pair(text, steady=False):
    """ns per pair; steady: without each pool's first call (an allocation, which sets the pool and the
    driver's own up) and its pair, where the lines say what it took (None where they do not)"""
    kvs = lines.pool_lines(text)
    ms, allocs = lines.total(kvs, "call_ms"), lines.total(kvs, "allocs")
    if steady:
        if not all("first_call_ms" in kv for kv in kvs):
            return None
        ms -= lines.total(kvs, "first_call_ms")
        allocs -= sum(1 for kv in kvs if float(kv.get("allocs", 0)) > 0)
    return ms * 1e6 / allocs if allocs > 0 else None


def rounds(folder, pattern, config, steady=False):
    """ns per pair of each round, in round order"""
    found = sorted((int(m.group(1)), name) for name, m in folder.match(pattern.format(c=re.escape(config))))
    return [x for x in (per_pair(folder.text(name), steady) for _, name in found) if x is not None]


def newest(sessions, pattern):
    """the newest of the sessions (oldest first) with rounds of the run, None where none has"""
    return next((f for f in reversed(sessions) if rounds(f, pattern, BASELINE)), None)


def table(sessions):
    """sessions: oldest first; where there are several, a run's column names the session it came from"""
    rows = []
    for where, pattern in SOURCES:
        folder = newest(sessions, pattern)
        if folder is None:
            continue
        base, base_steady = rounds(folder, pattern, BASELINE), rounds(folder, pattern, BASELINE, True)
        for config in CONFIGS:
            ns, steady = rounds(folder, pattern, config), rounds(folder, pattern, config, True)
            if not ns:
                continue
            run = f"{where} ({folder.label})" if len(sessions) > 1 else where
            rows.append([run, config, str(len(ns)), " / ".join(f"{x:.0f}" for x in ns),
                         f"{statistics.median(ns):.0f}", ratio(ns, base), ratio(steady, base_steady)])
    return markdown.table(["run", "configuration", "rounds", "ns per pair, each round", "median",
                           f"median / {BASELINE}'s", "the same without each pool's first call"], rows)


def ratio(ns, base):
    """the medians' ratio ("-" without figures)"""
    if not ns or not base:
        return "-"
    return f"{statistics.median(ns) / statistics.median(base):.2f}x"
