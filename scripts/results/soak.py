"""llama-server under a steady stream of requests, calm or beside random memory spikes
(scripts/llama.sh spikes): per configuration TAG and case serve-TAG-soak-CASE.jsonl
(scripts/serve-client.py --soak: a record per request, then its summary), .up (start-up's seconds
and the server's memory then) and .mem (its memory at the end); soak-spikes.jsonl
(scripts/spikes.py: a line per spike, the time it held) and soak-spikes.wait (the pools' wait
budget the servers ran with).

A request met a spike where its [start, end] overlaps a spike's [held_from, held_to]. The pools
wait up to their budget for memory to come back, so a compute error should only come in a spike
that outlasts it: the table splits the errors by that."""

import math
import re

from . import markdown, serve, stats

CASES = ("calm", "spikes")


def configs(folder):
    found = {m.group(1) for _, m in folder.match(r"serve-([^/]+)-soak-(?:calm|spikes)\.jsonl")}
    return stats.kind_order(found)


def spikes(folder):
    """[(held_from, held_to)] of the spikes run"""
    return [(s["held_from"], s["held_to"]) for s in folder.json_lines("soak-spikes.jsonl")]


def budget_s(folder):
    m = re.search(r"wait_ms (\d+)", folder.text("soak-spikes.wait", ""))
    return int(m.group(1)) / 1000 if m else serve.WAIT_S


def met(r, held):
    """the spikes the request was in flight through"""
    return [(a, b) for a, b in held if r["start"] < b and r["end"] > a]


def percentile(values, p):
    """the nearest-rank p-th percentile, None of no values"""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else None


def latency(reqs):
    """(p50, p99) s of the requests served"""
    done = [r["end"] - r["start"] for r in reqs if serve.outcome(r) == "served"]
    return percentile(done, 50), percentile(done, 99)


def up_mib(folder, tag, case):
    m = re.search(r"used_mib (\d+)", folder.text(f"serve-{tag}-{case}.up", ""))
    return m.group(1) if m else "-"


def ratio(x, calm):
    return f"{x / calm:.2f}x" if x is not None and calm else "-"


def seconds(x):
    return markdown.significant(x) if x is not None else "-"


def row(folder, tag, case, got, held, budget, calm):
    """one configuration's run of a case: the requests' fates, the server's, latency, memory"""
    reqs, s = got
    fate = {k: 0 for k in ("served", "late", "long", "other", "lost")}
    for r in reqs:
        o, through = serve.outcome(r), met(r, held)
        fate["served"] += o == "served"
        fate["late"] += o == "served" and bool(through)
        if o == "compute":  # in a spike the pools' wait could not outlast, or not
            fate["long" if any(b - a > budget for a, b in through) else "other"] += 1
        fate["lost"] += o in ("lost", "error")
    p50, p99 = latency(reqs)
    over = "-" if case == "calm" else f"{ratio(p50, calm[0])} / {ratio(p99, calm[1])}"
    return [folder.label, tag, case, str(len(reqs)), str(fate["served"]), str(fate["late"]),
            f"{fate['long']} / {fate['other']}", str(fate["lost"]), "alive" if s["alive_after"] else "**dead**",
            f"{seconds(p50)} / {seconds(p99)}", over,
            f"{up_mib(folder, tag, 'soak-' + case)} / {serve.server_mib(folder, tag, 'soak-' + case)}"]


def table(folders):
    """a row per session, configuration and case: requests, served, served late (in flight through a
    spike), compute errors (in a spike longer than the session's wait budget / other), lost, the server
    after, latency and its ratio to the calm run's, the server's MiB after start-up and at the end"""
    rows = []
    for folder in folders:
        held, budget = spikes(folder), budget_s(folder)
        for tag in configs(folder):
            calm = (None, None)
            for case in CASES:
                got = serve.records(folder, tag, "soak-" + case)
                if got is None:
                    continue
                if case == "calm":
                    calm = latency(got[0])
                rows.append(row(folder, tag, case, got, held if case == "spikes" else [], budget, calm))
    return markdown.table(["session", "configuration", "case", "requests", "served", "served late",
                           "compute error (spike over the wait / other)", "lost", "server after", "p50 / p99 s",
                           "over calm", "MiB after start-up / at the end"], rows)
