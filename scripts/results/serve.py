"""llama-server under load (scripts/llama.sh serve): per configuration TAG and case (free, spike,
window) serve-TAG-CASE.jsonl (scripts/serve-client.py: a record per request, then its summary),
.stats (the pools' lines when the server stopped), .smi (the GPU's memory.used every 50 ms) and
.mem (the server's device memory before it stopped)."""

import json
import re

from . import lines, markdown, stats

CASES = ("free", "spike", "window")
PHASES = ("before", "during", "after")


def configs(folder, case):
    found = {m.group(1) for _, m in folder.match(rf"serve-(.+)-{case}\.jsonl")}
    return stats.kind_order(found)


def summary(folder, tag, case):
    """the client's summary line, None where the run did not finish"""
    text = folder.text(f"serve-{tag}-{case}.jsonl", "")
    last = text.strip().splitlines()[-1:] or [""]
    try:
        s = json.loads(last[0])
    except ValueError:
        return None
    return s if s.get("summary") else None


def pools(folder, tag, case):
    """the pools' lines of the server, every pool summed"""
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
    return m.group(1) if m else "-"  # no process on the GPU then (or no nvidia-smi)


def count(s, phase, outcome):
    return s["phases"].get(phase, {}).get(outcome, 0)


def phase_total(s, phase):
    return sum(count(s, phase, o) for o in ("completed", "error", "lost"))


def free(folder):
    """(a) unconstrained: requests completed, generated t/s, the device's peak, the pools' peaks and
    their time per alloc+free pair"""
    rows = []
    for tag in configs(folder, "free"):
        s = summary(folder, tag, "free")
        if s is None:
            continue
        kvs = pools(folder, tag, "free")
        done = sum(count(s, p, "completed") for p in PHASES)
        rows.append([tag, f"{done} of {sum(phase_total(s, p) for p in PHASES)}", f"{s['generated_per_s']:.0f}",
                     peak_mib(folder, tag, "free"), f"{lines.total(kvs, 'peak_reserved_mib'):.0f}",
                     f"{lines.total(kvs, 'peak_live_mib'):.0f}", f"{lines.total(kvs, 'driver_allocs'):.0f}",
                     pair_ns(kvs)])
    return markdown.table(["configuration", "requests completed", "generated t/s", "device peak MiB",
                           "pools' peak reserved MiB", "pools' peak live MiB", "driver allocs",
                           "ns per alloc+free pair"], rows)


def trouble(folder, case):
    """(b) spike, (c) window: what became of the requests sent during the stretch and after it,
    whether the server lived, and its memory afterwards against the unconstrained run's"""
    rows = []
    for tag in configs(folder, case):
        s = summary(folder, tag, case)
        if s is None:
            continue
        kvs = pools(folder, tag, case)
        during = " / ".join(str(count(s, "during", o)) for o in ("completed", "error", "lost"))
        before = count(s, "before", "completed"), phase_total(s, "before")
        after = count(s, "after", "completed"), phase_total(s, "after")
        said = next((m for m in s["messages"]), "")
        rows.append([tag, f"{before[0]} of {before[1]}", during, "alive" if s["alive_after"] else "**dead**",
                     f"{after[0]} of {after[1]}", f"{server_mib(folder, tag, case)} ({server_mib(folder, tag, 'free')})",
                     f"{lines.total(kvs, 'oom'):.0f}", f"`{said[:80]}`" if said else ""])
    return markdown.table(["configuration", "before: completed", "during: completed / error / lost", "server after",
                           "after: completed", "server MiB after (unconstrained run's)", "pools' OOM returned",
                           "first error or loss"], rows)
