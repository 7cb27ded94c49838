"""Google Benchmark JSON: bench-async's HitPair and CaptureQuery on an H200 (a session's
bench-async/{before,after}-COMMIT-N.json) and bench-hit's hit path on the sim driver
(docs/results/bench-hit-COMMIT.json), a file a run."""

import glob
import json
import os
from collections import defaultdict

from . import markdown, source

# bench-async's HitPair/kind:<GGML_CPOOL_KIND_*> (include/ggml-cuda-pool.h) and CaptureQuery/api:<a>
ASYNC_COLUMNS = (("HitPair/kind:2", "legacy"), ("HitPair/kind:3", "plain"), ("HitPair/kind:1", "vmm"),
                 ("HitPair/kind:4", "async"), ("CaptureQuery/api:0", "runtime query"),
                 ("CaptureQuery/api:1", "driver query"))
HIT_KINDS = ("ggml-style", "ggml-vmm-style", "legacy", "plain", "vmm", "async")


def medians(text, time="real_time"):
    """{run name: its median over the repetitions} of one Google Benchmark JSON file"""
    return {b["run_name"]: b[time] for b in json.loads(text)["benchmarks"] if b.get("aggregate_name") == "median"}


def bench_async(folder):
    """ns per hit pair and per capture query, min-max over the runs, before and after"""
    runs = defaultdict(list)  # "before (COMMIT)" -> [medians of a run]
    for name, m in folder.match(r"bench-async/(before|after)-(\w+)-\d+\.json"):
        runs[(m.group(1) == "after", f"{m.group(1)} ({m.group(2)})")].append(medians(folder.text(name)))
    rows = []
    for (_, label), found in sorted(runs.items()):
        cells = []
        for prefix, _ in ASYNC_COLUMNS:
            ns = [v for run in found for k, v in run.items() if k.startswith(prefix + "/")]
            cells.append(f"{markdown.significant(min(ns))}-{markdown.significant(max(ns))}" if ns else "")
        rows.append([label] + cells)
    return markdown.table([""] + [name for _, name in ASYNC_COLUMNS], rows)


def bench_hit(baseline="ggml-style", family="hit", pattern="bench-hit-[0-9a-f]*.json"):
    """median ns per alloc + free pair by kind and cached buffers, and the ratio to the baseline at
    the same depth; a / between runs (files in their date order), a kind a run did not time left
    out of its cell. family hit: CPU time back to back (the development machine's runs,
    bench-hit-COMMIT.json); cold: the clock's time of each call after an eviction (the H200 host's
    runs, bench-hit-h200-COMMIT.json)"""
    time = "cpu_time" if family == "hit" else "real_time"
    texts = []
    for path in sorted(glob.glob(os.path.join(source.ROOT, source.RESULTS, pattern))):
        with open(path) as f:
            texts.append(f.read())
    # cold/vmm/8/iterations:2000/manual_time -> cold/vmm/8
    runs = sorted((json.loads(t)["context"]["date"],
                   {"/".join(k.split("/")[:3]): v for k, v in medians(t, time).items() if k.startswith(family + "/")})
                  for t in texts)
    runs = [run for run in runs if any(k.startswith(f"{family}/{baseline}/") for k in run[1])]
    kinds = [k for k in HIT_KINDS if any(name.startswith(f"{family}/{k}/") for _, run in runs for name in run)]
    # cached buffers in their order, then named workloads (step)
    depths = sorted({k.split("/")[2] for _, run in runs for k in run}, key=lambda d: (not d.isdigit(), int(d) if d.isdigit() else 0, d))
    rows = []
    for depth in depths:
        row = [str(depth)]
        for kind in kinds:
            pairs = [(run.get(f"{family}/{kind}/{depth}"), run.get(f"{family}/{baseline}/{depth}")) for _, run in runs]
            pairs = [(x, b) for x, b in pairs if x is not None]
            cell = " / ".join(markdown.significant(x) for x, _ in pairs) + " ns"
            if kind != baseline:
                cell += " (" + " / ".join(f"{x / b:.2f}x" for x, b in pairs if b) + ")"
            row.append(cell)
        rows.append(row)
    return markdown.table(["cached buffers"] + kinds, rows)
