"""Runs under memory pressure (scripts/llama.sh growing): another process leaves S + H MiB free,
and each configuration runs at H stepping down until it fails. A cell says how a run ended: ok
with its pools' peak reserved (every pool summed) and their reclaims and flushes, or aborted with
the reason its log gives; blank where the configuration did not run at that H."""

import re
from collections import defaultdict

from . import lines, logs, markdown, stats


def outcome(folder, tag):
    log = folder.text(tag + ".log", "")
    if logs.exit_status(log) != 0:
        why = logs.aborted(log)
        return f"aborted: {why}" if why else "aborted"
    pools = lines.pool_lines(folder.text(tag + ".stats"))
    parts = [f"ok, {lines.total(pools, 'peak_reserved_mib'):.0f} MiB"]
    for key, one, many in (("lru_reclaims", "reclaim", "reclaims"), ("flushes", "flush", "flushes")):
        n = int(lines.total(pools, key))
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts)


def sweep(folder, prefix):
    """{config: {H: cell}} of one session's runs"""
    runs = defaultdict(dict)
    for name, m in folder.match(re.escape(prefix) + r"-(.+)-h(\d+)\.log"):
        runs[m.group(1)][int(m.group(2))] = outcome(folder, name[:-len(".log")])
    return runs


def latest(folders, prefix):
    """{config: {H: cell}}: each run as the latest session that made it ended"""
    runs = defaultdict(dict)
    for folder in folders:
        for config, cells in sweep(folder, prefix).items():
            runs[config].update(cells)
    return runs


def overlay(folders, prefix):
    """the first session's cells, with what a later session's run gave where it differs"""
    runs = sweep(folders[0], prefix)
    for folder in folders[1:]:
        for config, cells in sweep(folder, prefix).items():
            for h, cell in cells.items():
                was = runs[config].get(h, "")
                if cell != was:
                    runs[config][h] = f"{was}; at {folder.label}: {cell}" if was else f"at {folder.label}: {cell}"
    return runs


def grouped(runs, heads):
    """[(heads, column)]: neighbouring H whose cells agree in every row share a column"""
    out = []
    for h in heads:
        column = [runs[c].get(h, "") for c in runs]
        if out and out[-1][1] == column:
            out[-1][0].append(h)
        else:
            out.append(([h], column))
    return out


def head(hs):
    return str(hs[0]) if len(hs) == 1 else f"{hs[0]}, {hs[1]}" if len(hs) == 2 else f"{hs[0]}-{hs[-1]}"


def table(folders, prefix="growing"):
    """configuration x H over one or more sessions' sweeps"""
    runs = overlay(folders, prefix)
    configs = stats.kind_order(runs)
    runs = {c: runs[c] for c in configs}
    columns = grouped(runs, sorted({h for cells in runs.values() for h in cells}, reverse=True))
    rows = []
    for i, config in enumerate(configs):
        row, seen = [config], set()
        for _, column in columns:
            cell = column[i]
            row.append("aborted, the same" if cell.startswith("aborted") and cell in seen else cell)
            seen.add(cell)
        rows.append(row)
    heads = [head(hs) for hs, _ in columns]
    return markdown.table(["configuration"] + [f"H = {heads[0]}"] + heads[1:], rows) if rows else ""


# the code of each run of the async synchronizes' comparison (syncs-LABEL/)
LABELS = {"before": "without the re-read (as kept)", "after": "with the re-read"}


def syncs(folder):
    """the async kind in the pressure step's run (llama-completion, about 9000 tokens of prompt in
    batches of 2048) before and after a change (syncs-LABEL/pressure-async-hH.*): the pool's
    synchronizes, driver allocations, peak reserved, t/s, and the text against the first label's"""
    rows, first = [], {}
    for name, m in folder.match(r"syncs-(\w+)/pressure-async-h(\d+)\.stats"):
        label, h = m.group(1), int(m.group(2))
        kv = lines.pool_lines(folder.text(name))
        text = folder.text(name[:-len(".stats")] + ".txt", "")
        first.setdefault(h, text)
        ts = logs.generation_rate(folder.text(name[:-len(".stats")] + ".log", ""))
        rows.append((label != "before", -h, [LABELS.get(label, label), "unconstrained" if h > 100000 else f"{h}",
                     f"{lines.total(kv, 'syncs'):.0f}", f"{lines.total(kv, 'driver_allocs'):.0f}",
                     f"{lines.total(kv, 'peak_reserved_mib'):.0f}", f"{ts:.2f}" if ts else "?",
                     "same" if text == first[h] else "DIFFERS"]))
    return markdown.table(["code", "H MiB", "pool synchronizes", "driver allocs", "peak reserved MiB", "t/s",
                           "text"], [r for *_, r in sorted(rows, key=lambda r: r[:2])])
