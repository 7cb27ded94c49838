"""README's headline: every configuration against ggml's own pools, one row each, from the tables
the docs print in full: speed (the rotating tg128 rounds, place-adjusted), total device memory
(the longctx step's short run: a 32k context, the device's peak above idle), the least free
memory a run under pressure completes with (the growing sweep), faults (the faults step) and what
became of llama-server's requests through a stretch without memory (the serve step's stretches of
fixed length)."""

from . import markdown, pressure, runs, serve, speed, longctx
from .stats import BASELINE

ROWS = ("ggml", "ggml-legacy", "vmm", "legacy", "plain", "async")


def speed_cells(bench):
    """{config: 'ratio at the first depth / at the last'} of the place-adjusted rounds"""
    tests = speed.placed(bench)
    keys = sorted(tests, key=lambda k: k[3])
    out = {}
    for config in ROWS:
        found = [tests[k].intervals.get(config) for k in (keys[0], keys[-1])] if keys else []
        if all(found) and found:
            out[config] = " / ".join(markdown.interval(*f) for f in found)
    return out


def memory_cells(folder):
    """{config: 'MiB (+difference to ggml)'} of the short run's device peaks"""
    peaks = {config: longctx.peak_above_idle(folder, tag) for config, tag in longctx.runs(folder, "short")}
    base = peaks.get(BASELINE)
    return {c: f"{p} ({p - base:+d})" if base is not None else str(p) for c, p in peaks.items() if p is not None}


def pressure_cells(folders):
    """{config: the lowest H that completed, and the next lower that did not}"""
    out = {}
    for config, cells in pressure.latest(folders, "growing").items():
        ok = [h for h, c in cells.items() if c.startswith("ok")]
        failed = [h for h, c in cells.items() if c.startswith("aborted") and (not ok or h < min(ok))]
        if ok:
            out[config] = f"{min(ok)}" + (f" (aborted at {max(failed)})" if failed else "")
    return out


def fault_cells(folder):
    """{kind: what its fault runs did}: recovered with the same text, or how they ended"""
    out = {}
    for kind in ROWS:
        found = [m.group(2) for name, m in folder.match(runs.FAULT_RUN) if m.group(1) == kind]
        if not found:
            continue
        rows = {case: runs.fault_row(folder, kind, case, f"completion-{kind}-{case}.log")
                for case in found if "-" not in case}
        recovered = [c for c, r in rows.items() if r[2] == "completed" and r[3] == "same"]
        clear = [c for c, r in rows.items() if r[2].startswith("aborted: the pool")]
        failed = [c for c, r in rows.items() if r[2].startswith("failed: the pool")]
        parts = [f"{', '.join(recovered)}: same text"] if recovered else []
        parts += [f"{', '.join(clear)}: the pool's one line"] if clear else []
        parts += [f"{', '.join(failed)}: the pool's line, llama.cpp's decode failure, exit 1"] if failed else []
        out[kind] = "; ".join(parts)
    return out


def server_cells(folders):
    """{config: what became of llama-server's requests through stretches no longer than the pools'
    wait and through longer ones (co-tenants and fault windows of W s, mid-run and from start-up),
    over every session's runs of the configuration and its variants (:kvpool, :declared, :nowait); not
    :lazy, the control that shows why the adapter loads every kernel at start-up}"""
    out = {}
    for config in ROWS:
        parts = []
        for label, short in (("short", True), ("long", False)):
            got = [serve.records(folder, tag, case) for folder in folders for case in serve.timed_cases(folder)
                   for tag in serve.configs(folder, case)
                   if serve.base_config(tag) == config and "lazy" not in tag.split("-")
                   and (serve.length_s(case) <= serve.wait_s(tag)) == short]
            got = [g for g in got if g is not None]
            if not got:
                continue
            c = {k: sum(serve.counts(reqs, p)[k] for reqs, _ in got for p in serve.PHASES)
                 for k in ("served", "compute", "lost", "all")}
            dead = sum(1 for _, s in got if not s["alive_after"])
            parts.append(f"{label}: {c['served']} of {c['all']} served, {c['compute']} failed, {c['lost']} lost"
                         + (f", **the server died in {dead} of {len(got)} runs**" if dead else ""))
        out[config] = "; ".join(parts) or "-"
    return out


def table(bench, memory_folder, pressure_folders, faults_folder, serve_folders, depths):
    cells = (speed_cells(bench), memory_cells(memory_folder) if memory_folder else {},
             pressure_cells(pressure_folders), fault_cells(faults_folder), server_cells(serve_folders))
    rows = [[c] + [col.get(c, "-") for col in cells] for c in ROWS]
    for row in rows:
        if row[0] == BASELINE:
            row[1], row[4] = "1", "a refusal ends the run with a CUDA error"
    return markdown.table(["configuration", f"tg128 t/s to ggml's, place-adjusted, depth {depths}",
                           "total device memory MiB (to ggml's)", "least free H MiB it completes with",
                           "faults", "llama-server's requests through a co-tenant or fault window shorter / longer than the "
                           "pools' wait"], rows)
