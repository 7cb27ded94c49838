"""The lines the adapter writes at GGML_CUDA_POOL_STATS: one per pool when it goes
(`ggml-cuda-pool stats: context= ...`) and one per backend context (`ggml-cuda-pool graphs:
context= ... config=`); context numbers a process's contexts from 1 (`session=` in lines printed
before it was named so, read as the same field)."""

import re
from collections import defaultdict

STATS = re.compile(r"ggml-cuda-pool stats: (.*)")
SNAPSHOT = re.compile(r"ggml-cuda-pool snapshot: (.*)")  # a live process's, on SIGUSR1
GRAPHS = re.compile(r"ggml-cuda-pool graphs: (.*)")
GRAPH_COUNTS = ("eager", "captures", "instantiations", "updates", "update_failures", "launches", "abandoned")


def fields(line, pattern=STATS):
    """a stats or graphs line's {key: value}, None when the line is not one"""
    m = pattern.search(line)
    if not m:
        return None
    kv = dict(item.split("=", 1) for item in m.group(1).split())
    if "session" in kv:
        kv["context"] = kv.pop("session")
    return kv


def by_context(text, pattern=STATS):
    """context -> [{key: value}] of the lines of one kind (a pool's statistics, a context's graphs)"""
    out = defaultdict(list)
    for line in (text or "").splitlines():
        kv = fields(line, pattern)
        if kv:
            out[int(kv["context"])].append(kv)
    return out


def pool_lines(text):
    """every pool's statistics, whichever context"""
    return [kv for kvs in by_context(text).values() for kv in kvs]


def total(kvs, key):
    """one field summed over pool lines (0 where a line lacks it)"""
    return sum(float(kv.get(key, 0)) for kv in kvs)


def failed_computes(text):
    """computes that returned GGML_STATUS_ALLOC_FAILED, every context's graphs line summed"""
    return sum(int(kv.get("failed", 0)) for kvs in by_context(text, GRAPHS).values() for kv in kvs)


def graph_counts(text):
    """the CUDA graph counts of every context summed, and the pools' synchronizes (syncs)"""
    total = defaultdict(int)
    for kv in (kv for kvs in by_context(text, GRAPHS).values() for kv in kvs):
        for k in GRAPH_COUNTS:
            total[k] += int(kv.get(k, 0))
    for kv in pool_lines(text):
        total["syncs"] += int(kv.get("syncs", 0))
    return total
