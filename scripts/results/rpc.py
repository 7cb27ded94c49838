"""llama.cpp's RPC backend (scripts/llama.sh rpc): per configuration two ggml-rpc-server processes
(rpc-TAG-serverN.stats: their pools' snapshot lines, one per SIGUSR1, written at the next client's
first call; rpc-TAG.mem: each server's device memory after each client) and five clients:
completion-rpc-TAG-K.txt for K = 1, 2 (both servers), 5 (server 0 alone), 4 the client whose
second server was killed; rpc-TAG-bench-rR.jsonl llama-bench pp512 and tg128, R the round."""

import re
import statistics
from collections import defaultdict

from . import lines, markdown, rounds, stats
from .runs import md5

CLIENTS = (1, 2, 5)


def configs(folder):
    found = {m.group(1) for _, m in folder.match(r"rpc-(.+)-server0\.stats")}
    return stats.kind_order(c for c in found if not re.search(r"-bench-r\d+$", c))


def texts(folder):
    """the texts of clients 1, 2 and 5 against the single process's, and how client 4 ended"""
    rows = []
    for c in configs(folder):
        single = folder.text(f"completion-{c}.txt", "")
        got = [folder.text(f"completion-rpc-{c}-{k}.txt", "") for k in CLIENTS]
        log = folder.text(f"completion-rpc-{c}-4.log", "")
        end = folder.text(f"rpc-{c}-4.exit", "").strip()
        said = re.search(r"ggml-rpc\.cpp:\d+: (.+)", log)
        message = (f"`{said.group(1).strip()}`" if said else
                   "no message (killed by SIGPIPE, writing to the socket)" if end == "141" else "no message")
        rows.append([c, f"`{md5(single)}`"] + [f"`{md5(t)}`" for t in got] + [f"exit {end}: {message}"])
    return markdown.table(["configuration", "single process", "client 1 (3 devices)", "client 2 (3 devices)",
                           "client 5 (2 devices)", "client 4, its second server killed"], rows)


def servers(folder):
    """each server's pools after each client (the snapshot lines, every pool summed: reserved MiB
    and driver allocations) and its process's device memory (nvidia-smi)"""
    rows = []
    for c in configs(folder):
        mem = defaultdict(list)
        for line in folder.text(f"rpc-{c}.mem", "").splitlines():
            m = re.match(r"after client (\d+): server (\d+) used_mib (\d*)", line)
            if m:
                mem[int(m.group(2))].append(m.group(3) or "?")
        for server in (0, 1):
            snaps = snapshots(folder.text(f"rpc-{c}-server{server}.stats", ""))
            rows.append([c, str(server), " / ".join(f"{r:.2f}" for r, _ in snaps),
                         " / ".join(f"{d:.0f}" for _, d in snaps), " / ".join(mem[server])])
    return markdown.table(["configuration", "server", "pools' reserved MiB after clients 1 / 2 / 3 / 4",
                           "driver allocs then", "process MiB after clients 1 / 2 / 3 / 4 (/ 5)"], rows)


def snapshots(text):
    """[(reserved MiB, driver allocs)] per snapshot, in order, every pool of the process summed"""
    out = []
    for kvs in snapshot_groups(text):
        out.append((lines.total(kvs, "reserved_mib"), lines.total(kvs, "driver_allocs")))
    return out


def snapshot_groups(text):
    """the snapshot lines grouped by SIGUSR1: a pool's second line starts the next group. Each
    pool writes its line at its next call, so this holds where every pool of the server is called
    by every client (the step's servers: one pool each, slot 0)"""
    groups, seen = [], set()
    for line in text.splitlines():
        kv = lines.fields(line, lines.SNAPSHOT)
        if not kv:
            continue
        key = (kv["context"], kv["device"], kv["slot"])
        if not groups or key in seen:
            groups.append([])
            seen = set()
        groups[-1].append(kv)
        seen.add(key)
    return groups


def speed(folder):
    """llama-bench through the servers: each test's median t/s over every round's repetitions,
    its min-max, and the ratio of medians to ggml's"""
    samples = defaultdict(list)
    for name, m in folder.match(r"rpc-(.+)-bench-r\d+\.jsonl"):
        for row in folder.json_lines(name):
            samples[(m.group(1), rounds.test_name(row))] += row["samples_ts"]
    tests = sorted({t for _, t in samples}, reverse=True)
    rows = []
    for c in configs(folder):
        cells = [c]
        for t in tests:
            got, base = samples.get((c, t)), samples.get(("ggml", t))
            if not got:
                cells += ["", ""]
                continue
            mine = statistics.median(got)
            ratio = f"{mine / statistics.median(base):.3f}" if base else ""
            cells += [f"{mine:.0f} ({min(got):.0f}-{max(got):.0f})", ratio]
        rows.append(cells)
    return markdown.table(["configuration"] + [h for t in tests for h in (f"{t} t/s (min-max)", "to ggml")], rows)
