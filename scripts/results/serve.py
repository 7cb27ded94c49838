"""llama-server under load (scripts/llama.sh serve): per configuration TAG and case (free,
spike-hH: a co-tenant leaving H MiB free, window) serve-TAG-CASE.jsonl (scripts/serve-client.py:
a record per request, then its summary), .log (the server's), .stats (its pools' and graphs'
lines when it stopped), .smi (the GPU's memory.used every 50 ms) and .mem (the server's device
memory before it stopped).

A request the server answered is one of: completed; refused by the server's output parser (with
random weights some completions' text "does not match the expected Content-only format": the
model computed it, so it counts as served); a compute error ("Compute error.", the batch's compute
failed); or lost (no answer: the connection refused or reset)."""

import re

from . import lines, logs, markdown, stats

PHASES = ("before", "during", "after")
WAIT_S = 5  # s: the adapter's default GGML_CUDA_POOL_WAIT_MS, which the serve and spikes steps keep unless set
VARIANTS = re.compile(r"(?:-(?:kvpool1x|kvpool|declared|lazy|nowait))+$")  # a configuration's suffixes in its tag
PARSER = "does not match the expected"  # the output parser's refusal of random weights' text
COMPUTE_ERROR = "Compute error."


def configs(folder, case):
    found = {m.group(1) for _, m in folder.match(rf"serve-([^/]+)-{case}\.jsonl")}  # not a round's (serve-rR/)
    return stats.kind_order(found)


def spikes(folder):
    """the spike cases run, by the MiB they left free, most first: ['spike-h64', 'spike-h16']"""
    found = {m.group(1) for _, m in folder.match(r"serve-[^/]+-(spike-h\d+)\.jsonl")}
    return sorted(found, key=lambda c: -int(c.split("-h")[1]))


def records(folder, tag, case):
    """(the requests' records, the client's summary); None where the run did not finish"""
    rows = folder.json_lines(f"serve-{tag}-{case}.jsonl")
    if not rows or not rows[-1].get("summary"):
        return None
    return rows[:-1], rows[-1]


def outcome(r):
    """served (completed, or computed and refused by the parser), compute (a compute error),
    lost, or error (any other answer)"""
    if r["outcome"] == "completed" or PARSER in r.get("message", ""):
        return "served"
    if r["outcome"] == "error":
        return "compute" if r.get("message") == COMPUTE_ERROR else "error"
    return "lost"


def counts(reqs, phase):
    out = {"served": 0, "parser": 0, "compute": 0, "lost": 0, "error": 0}
    for r in (r for r in reqs if r["phase"] == phase):
        out[outcome(r)] += 1
        out["parser"] += PARSER in r.get("message", "")
    out["all"] = sum(out[k] for k in ("served", "compute", "lost", "error"))
    return out


def pools(folder, tag, case):
    """the pools' lines of the server"""
    return lines.pool_lines(folder.text(f"serve-{tag}-{case}.stats", ""))


def pair_ns(kvs):
    """time inside the pools per alloc+free pair: call_ms over allocations, every pool summed"""
    allocs = lines.total(kvs, "allocs")
    return f"{lines.total(kvs, 'call_ms') * 1e6 / allocs:.0f}" if allocs else "-"


def peak_mib(folder, tag, case):
    values = [int(v) for v in re.findall(r"^\s*(\d+)\s*$", folder.text(f"serve-{tag}-{case}.smi", ""), re.M)]
    return str(max(values)) if values else "-"


def server_mib(folder, tag, case):
    m = re.search(r"used_mib (\d+)", folder.text(f"serve-{tag}-{case}.mem", ""))
    return m.group(1) if m else "-"  # no process on the GPU then (or no nvidia-smi), or no such run


def served(c):
    """'served of all', the parser's refusals among them in parentheses"""
    return f"{c['served']} of {c['all']}" + (f" ({c['parser']})" if c["parser"] else "")


def free(folder):
    """(a) unconstrained: requests served, generated t/s, the device's peak, the pools' peaks and
    their time per alloc+free pair"""
    rows = []
    for tag in configs(folder, "free"):
        got = records(folder, tag, "free")
        if got is None:
            continue
        reqs, s = got
        total = {k: sum(counts(reqs, p)[k] for p in PHASES) for k in ("served", "parser", "all")}
        kvs = pools(folder, tag, "free")
        rows.append([tag, served(total), f"{s['generated_per_s']:.0f}", peak_mib(folder, tag, "free"),
                     f"{lines.total(kvs, 'peak_reserved_mib'):.0f}", f"{lines.total(kvs, 'peak_live_mib'):.0f}",
                     f"{lines.total(kvs, 'driver_allocs'):.0f}", pair_ns(kvs)])
    return markdown.table(["configuration", "requests served (parser's refusals)", "generated t/s",
                           "device peak MiB", "pools' peak reserved MiB", "pools' peak live MiB", "driver allocs",
                           "ns per alloc+free pair"], rows)


def trouble_rows(folder, case, label=""):
    rows = []
    for tag in configs(folder, case):
        got = records(folder, tag, case)
        if got is None:
            continue
        reqs, s = got
        before, during, after = (counts(reqs, p) for p in PHASES)
        why = logs.aborted(folder.text(f"serve-{tag}-{case}.log", ""))
        rows.append(([label] if label else []) + [
            tag, served(before), f"{during['served']} / {during['compute']} / {during['lost']}",
            "alive" if s["alive_after"] else "**dead**", served(after),
            f"{server_mib(folder, tag, case) if s['alive_after'] else '-'} ({server_mib(folder, tag, 'free')})",
            str(lines.failed_computes(folder.text(f"serve-{tag}-{case}.stats", ""))), why or ""])
    return rows


TROUBLE_COLUMNS = ["configuration", "before: served", "during: served / compute error / lost", "server after",
                   "after: served", "server MiB after (unconstrained run's)", "computes failed",
                   "the refusal (the server's log)"]


def trouble(folder, case):
    """(b) spike, (c) window: what became of the requests sent during the stretch and after it,
    whether the server lived, and its memory afterwards against the unconstrained run's; the
    spikes a row per MiB they left free"""
    if case == "window":
        return markdown.table(TROUBLE_COLUMNS, trouble_rows(folder, case))
    rows = [row for c in spikes(folder) for row in trouble_rows(folder, c, c.split("-h")[1])]
    return markdown.table(["MiB left free"] + TROUBLE_COLUMNS, rows)


def timed_cases(folder):
    """the runs of a fixed length (serve.sh's spike:W[:start], window:W[:start]), in case_order:
    ['spike-h16-w1', 'spike-h16-w3-start', 'window-w3']"""
    found = {m.group(1) for _, m in folder.match(r"serve-[^/]+-((?:spike-h\d+|window)-w[\d.]+(?:-start)?)\.jsonl")}
    return sorted(found, key=case_order)


def case_order(case):
    """co-tenants before fault windows, mid-run before start-up, the least memory left first, then W"""
    h = re.search(r"-h(\d+)", case)
    return case.startswith("window"), case.endswith("-start"), -int(h.group(1)) if h else 0, length_s(case)


def length_s(case):
    """W of a fixed-length case"""
    return float(re.search(r"-w([\d.]+)", case).group(1))


def wait_s(tag):
    """the pools' wait a run had: none under :nowait"""
    return 0 if "nowait" in tag.split("-") else WAIT_S


def base_config(tag):
    """the configuration a tag runs, without its variants: legacy for legacy-kvpool-nowait"""
    return VARIANTS.sub("", tag)


def describe(case):
    """'co-tenant, 16 MiB free, 3 s from start-up' for spike-h16-w3-start"""
    h, w = re.search(r"-h(\d+)", case), f"{length_s(case):g}"
    what = f"co-tenant, {h.group(1)} MiB free" if h else "fault window"
    return f"{what}, {w} s " + ("from start-up" if case.endswith("-start") else "mid-run")


def timed(folders):
    """(d) a stretch of fixed length, every session's runs: every request's fate (served, served while
    in flight during the stretch, compute error, lost), the server's, and what the pools' wait did
    (waits served of waits, ms waited); a row per case, session and configuration"""
    rows = []
    for case, folder in sorted(((c, f) for f in folders for c in timed_cases(f)), key=lambda cf: case_order(cf[0])):
        for tag in configs(folder, case):
            got = records(folder, tag, case)
            if got is None:
                continue
            reqs, s = got
            c = {k: sum(counts(reqs, p)[k] for p in PHASES) for k in ("served", "compute", "lost", "error", "all")}
            late = sum(1 for r in reqs if r.get("met_trouble") and outcome(r) == "served")
            kvs = pools(folder, tag, case)
            waits = (f"{lines.total(kvs, 'waits_served'):.0f} of {lines.total(kvs, 'waits'):.0f} "
                     f"({lines.total(kvs, 'wait_ms'):.0f})") if kvs else "-"
            rows.append([describe(case), folder.label, tag, f"{c['all']}", f"{c['served']} ({late})",
                         f"{c['compute']}", f"{c['lost'] + c['error']}", "alive" if s["alive_after"] else "**dead**",
                         f"{s['stretch_s']}", waits, server_mib(folder, tag, case) if s["alive_after"] else "-",
                         logs.aborted(folder.text(f"serve-{tag}-{case}.log", "")) or ""])
    return markdown.table(["stretch", "session", "configuration", "requests", "served (in flight during the stretch)",
                           "compute error", "lost", "server after", "stretch s", "waits served of waits (ms waited)",
                           "server MiB after", "the refusal (the server's log)"], rows)
