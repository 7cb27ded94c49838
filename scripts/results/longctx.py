"""The K/V f16 conversions over long contexts (scripts/llama.sh longctx, longctx_budget): each
configuration unconstrained on a workload (longctx-WORKLOAD-TAG.*: .log with the exit status,
.stats, .smi the device's memory every 50 ms, .idle what was used before the run, .txt the text
or llama-bench's JSON), and the lowest H of the budget sweep that completes (longctx-WORKLOAD-
TAG-hH.*, S in longctx-WORKLOAD-fixed.txt). A tag is the configuration with ':' as '-'."""

import re

from . import lines, logs, markdown
from .runs import md5

CONFIGS = ("ggml-legacy", "ggml-legacy:kvpool", "legacy:kvpool", "plain:kvpool", "legacy:kvpool1x", "ggml",
           "vmm:kvpool", "async:kvpool", "legacy", "plain", "vmm", "async")


def config_of(tag):
    for config in CONFIGS:
        if config.replace(":", "-") == tag:
            return config
    return tag


def runs(folder, workload):
    """[(config, tag)] of a workload's unconstrained runs, in the order llama.sh runs them"""
    found = [m.group(1) for _, m in folder.match(rf"longctx-{workload}-(.+)\.idle")]
    return sorted(((config_of(t), f"longctx-{workload}-{t}") for t in found), key=lambda ct: run_order(ct[0]))


def run_order(config):
    return CONFIGS.index(config) if config in CONFIGS else len(CONFIGS)


def speed(folder, tag):
    """t/s: llama-bench's average where the run was llama-bench's, else llama-completion's
    generation rate"""
    if folder.text(tag + ".txt", "").lstrip().startswith("{"):
        rows = folder.json_lines(tag + ".txt")
        return rows[-1].get("avg_ts") if rows else None
    return logs.generation_rate(folder.text(tag + ".log", ""))


def peak_above_idle(folder, tag):
    idle = re.search(r"idle_mib (\d+)", folder.text(tag + ".idle", ""))
    samples = [int(s) for s in folder.text(tag + ".smi", "").split() if s.isdigit()]
    return max(samples) - int(idle.group(1)) if idle and samples else None


def pools(folder, tag):
    """the pools' figures, every pool of every context summed. ggml's VMM pool (pool=ggml) never
    gives memory back: its line's flushes, counted from outside by a rule that holds for ggml's
    legacy pool alone (before ca1ed0c for every pool of ggml), are left out"""
    kvs = lines.pool_lines(folder.text(tag + ".stats"))
    counted = [kv for kv in kvs if kv.get("pool") != "ggml"]
    return {k: lines.total(counted if k == "flushes" else kvs, k) for k in
            ("peak_reserved_mib", "peak_live_mib", "driver_allocs", "lru_reclaims", "flushes", "oom")}


def row(folder, config, tag, reference):
    log = folder.text(tag + ".log", "")
    if logs.exit_status(log) != 0:
        return [config, f"aborted: {logs.aborted(log) or 'exit ' + str(logs.exit_status(log))}"] + [""] * 8
    p, ts, peak = pools(folder, tag), speed(folder, tag), peak_above_idle(folder, tag)
    text = folder.text(tag + ".txt", "")
    same = "" if text.lstrip().startswith("{") else f"`{md5(text)}`" + (" same" if text == reference else "")
    return [config, "ok", f"{ts:.1f}" if ts else "?", str(peak) if peak is not None else "?",
            f"{p['peak_reserved_mib']:.0f}", f"{p['peak_live_mib']:.0f}", f"{p['driver_allocs']:.0f}",
            f"{p['lru_reclaims']:.0f}", f"{p['flushes']:.0f}", same]


def table(folder, workload):
    """one workload's unconstrained runs: t/s, the device's peak above idle, the pools' peaks,
    driver allocations, reclaims and flushes, the text's md5 ('same': the first run's text)"""
    found = runs(folder, workload)
    reference = folder.text(found[0][1] + ".txt", "") if found else ""
    rows = [row(folder, config, tag, reference) for config, tag in found]
    return markdown.table(["configuration", "run", "t/s", "device peak MiB", "pools' peak reserved MiB",
                           "peak live MiB", "driver allocs", "LRU reclaims", "flushes", "text"], rows)


def budget(folder, workload):
    """the budget sweep: each configuration's lowest H that completes (free memory S + H), the
    next lower H tried and how it ended, and the t/s, reclaims and flushes at that lowest H"""
    fixed = re.search(r"fixed_mib (-?\d+)", folder.text(f"longctx-{workload}-fixed.txt", ""))
    tried = {}
    for name, m in folder.match(rf"longctx-{workload}-(.+)-h(-?\d+)\.log"):
        tried.setdefault(config_of(m.group(1)), {})[int(m.group(2))] = name[:-len(".log")]
    rows = []
    for config in sorted(tried, key=run_order):
        done = {h: logs.exit_status(folder.text(t + ".log", "")) == 0 for h, t in tried[config].items()}
        ok = [h for h, good in done.items() if good]
        low = min(ok) if ok else None
        below = [h for h, good in done.items() if not good and (low is None or h < low)]
        failed = max(below) if below else None
        cells = [config, f"{low}" if low is not None else "none tried completed"]
        cells.append(f"{failed}: {logs.aborted(folder.text(tried[config][failed] + '.log', '')) or 'aborted'}"
                     if failed is not None else "")
        if low is not None:
            tag, p = tried[config][low], pools(folder, tried[config][low])
            ts = speed(folder, tag)
            cells += [f"{ts:.1f}" if ts else "?", f"{p['lru_reclaims']:.0f}", f"{p['flushes']:.0f}"]
        else:
            cells += ["", "", ""]
        rows.append(cells)
    head = f"S = {fixed.group(1)} MiB\n\n" if fixed else ""
    return head + markdown.table(["configuration", "lowest H that completes (MiB)", "next lower H tried",
                                           "t/s there", "LRU reclaims", "flushes"], rows)


def cotenant(folder, workload):
    """the workload beside a co-tenant (llama.sh cotenant: a second model loading and unloading,
    cotenant-WORKLOAD-TAG-hH.*, .loads its runs): how each ended, the co-tenant's loads that
    completed, t/s, the pools' figures and time in their calls, the text against the unconstrained run's"""
    rows = []
    found = folder.match(rf"cotenant-{workload}-(.+)-h(-?\d+)\.log")
    for name, m in sorted(found, key=lambda nm: run_order(config_of(nm[1].group(1)))):
        tag, config = name[:-len(".log")], config_of(m.group(1))
        log, loads = folder.text(name, ""), folder.text(tag + ".loads", "")
        p, ts = pools(folder, tag), speed(folder, tag)
        calls = lines.total(lines.pool_lines(folder.text(tag + ".stats")), "call_ms")
        alone = folder.text(f"longctx-{workload}-{m.group(1)}.txt")
        same = "" if alone is None else "same" if folder.text(tag + ".txt", "") == alone else "DIFFERS"
        rows.append([config, m.group(2), f"exit {logs.exit_status(log)}",
                     f"{loads.count('exit 0')} of {len(loads.splitlines())}", f"{ts:.1f}" if ts else "?",
                     f"{p['peak_reserved_mib']:.0f}", f"{p['driver_allocs']:.0f}", f"{p['lru_reclaims']:.0f}",
                     f"{p['flushes']:.0f}", f"{calls:.1f}", same])
    return markdown.table(["configuration", "H MiB", "run", "co-tenant loads ok", "t/s", "pools' peak reserved MiB",
                           "driver allocs", "LRU reclaims", "flushes", "ms in pool calls",
                           "text (unconstrained run's)"], rows)
