#!/usr/bin/env python3
"""Tables from the results scripts/llama.sh leaves in a directory (Markdown on stdout):
test-backend-ops pass counts, greedy outputs, fault runs, llama-bench t/s per configuration with
a 95% bootstrap interval of the ratio of medians to ggml's pools, each pool's statistics
(GGML_CUDA_POOL_STATS lines, one per pool at its destruction), each context's CUDA graph counts,
peak total device memory, speculative decoding, and runs under memory pressure.

The k-th backend context of a llama-bench run belongs to its k-th test, since llama-bench makes
one llama context per test: the stats lines name their context (session=k), which maps them.

    scripts/llama-summary.py /tmp/llama-work/results
"""
import glob
import hashlib
import json
import os
import random
import re
import statistics
import sys
from collections import defaultdict

BASELINE = "ggml"
STATS = re.compile(r"ggml-cuda-pool stats: (.*)")
GRAPHS = re.compile(r"ggml-cuda-pool graphs: (.*)")
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 1
CONFIDENCE = 0.95
# a rotating round's test line (scripts/llama-bench-split.py): its context's index in the process,
# from 0. t/s moves with it by itself (on an H200, contexts 7 on ran about 5% slower than 0-6)
POSITION = "process_position"
# one configuration's llama-bench round: model, KV type, configuration, round
BENCH_FILE = re.compile(r"bench-(.+)-(f16|q8_0|q4_0|bf16)-(.+)-r(\d+)\.jsonl$")


def pooled(by_round, rounds=None):
    """the samples of the given rounds (default: all), a round drawn twice counted twice"""
    return [x for r in (sorted(by_round) if rounds is None else rounds) for x in by_round[r]]


def ratio_interval(values, base):
    """The ratio of medians and its bootstrap interval; values and base are samples by round
    ({round: [t/s, ...]}). The configurations run interleaved round by round, so a round's drift
    (clocks, temperature, the other tenants of the host) hits all of them alike: where both have
    two or more rounds in common, the rounds are resampled, the same rounds for both, which keeps
    that drift out of the interval (a paired bootstrap), and the ratio is of those rounds alone (a
    round only one of them ran, or pooled results where one sat a session out, would tilt it);
    otherwise every sample is resampled on its own."""
    common = sorted(set(values) & set(base))
    if len(common) >= 2:
        def ratio(pick):
            return statistics.median(pooled(values, pick)) / statistics.median(pooled(base, pick))
        return ratio(common), *bounds([ratio(pick) for pick in resamples(common)])
    v, b = pooled(values), pooled(base)
    rng = random.Random(BOOTSTRAP_SEED)
    draws = [statistics.median(rng.choices(v, k=len(v))) / statistics.median(rng.choices(b, k=len(b)))
             for _ in range(BOOTSTRAP_RESAMPLES)]
    return statistics.median(v) / statistics.median(b), *bounds(draws)


def resamples(rounds):
    """BOOTSTRAP_RESAMPLES draws of as many rounds, with replacement"""
    rng = random.Random(BOOTSTRAP_SEED)
    return [rng.choices(rounds, k=len(rounds)) for _ in range(BOOTSTRAP_RESAMPLES)]


def bounds(draws):
    """the CONFIDENCE interval of a statistic's bootstrap draws"""
    draws = sorted(draws)
    tail = (1 - CONFIDENCE) / 2
    return draws[int(tail * len(draws))], draws[int((1 - tail) * len(draws)) - 1]


def position_adjusted(cell, places):
    """(rounds, {config: (ratio, low, high)}, level): the ratio of medians to BASELINE's pools with every
    sample divided by the mean t/s at its process position (every configuration's samples there, over
    the rounds drawn), which takes the position's own effect out; rounds resampled as ratio_interval
    does. level: BASELINE's own adjusted median over every round (1: the configurations' average),
    which every ratio shares. cell: {config: {round: samples}}, places: {config: {round: position}};
    only the rounds in which every configuration has its position count (rotating rounds)."""
    rounds = sorted(set.intersection(*(set(places.get(c, {})) for c in cell)))
    if len(rounds) < 2 or BASELINE not in cell:
        return 0, {}, 0

    def medians(pick):
        total, count = defaultdict(float), defaultdict(int)
        for r in pick:
            for c in cell:
                total[places[c][r]] += sum(cell[c][r])
                count[places[c][r]] += len(cell[c][r])
        return {c: statistics.median(x * count[places[c][r]] / total[places[c][r]] for r in pick for x in cell[c][r])
                for c in cell}

    def ratios(m):
        return {c: m[c] / m[BASELINE] for c in cell if c != BASELINE}

    draws = [ratios(medians(pick)) for pick in resamples(rounds)]
    every = medians(rounds)
    return len(rounds), {c: (r, *bounds([d[c] for d in draws])) for c, r in ratios(every).items()}, every[BASELINE]


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def configs_of(results, prefix, suffix):
    names = []
    for p in sorted(glob.glob(os.path.join(results, prefix + "*" + suffix))):
        names.append(os.path.basename(p)[len(prefix):-len(suffix)])
    return names


def fields(line, pattern=STATS):
    """a stats or graphs line's {key: value}, None when the line is not one"""
    m = pattern.search(line)
    return dict(item.split("=", 1) for item in m.group(1).split()) if m else None


def stats_lines(path, pattern=STATS):
    """session -> list of {key: value} per line (a pool's statistics, or a context's graphs)"""
    out = defaultdict(list)
    if not os.path.exists(path):
        return out
    for line in read(path).splitlines():
        kv = fields(line, pattern)
        if kv:
            out[int(kv["session"])].append(kv)
    return out


def pool_lines(path):
    """every pool's statistics in a stats file, whichever context"""
    return [kv for kvs in stats_lines(path).values() for kv in kvs]


GRAPH_COUNTS = ("eager", "captures", "instantiations", "updates", "update_failures", "launches", "abandoned")


def graph_counts(path):
    """the CUDA graph counts of every context in a stats file, summed, and the pools' synchronizes"""
    total = defaultdict(int)
    for lines in stats_lines(path, GRAPHS).values():
        for kv in lines:
            for k in GRAPH_COUNTS:
                total[k] += int(kv.get(k, 0))
    for lines in stats_lines(path).values():
        for kv in lines:
            total["syncs"] += int(kv.get("syncs", 0))
    return total


def table(title, columns, rows, row_format):
    """a markdown table under its title, or nothing when there are no rows"""
    if not rows:
        return
    print(f"### {title}\n")
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for r in rows:
        print(row_format % r)
    print()


def ops(results):
    rows = []
    for c in configs_of(results, "ops-", ".txt"):
        text = read(os.path.join(results, f"ops-{c}.txt"))
        tests = re.search(r"(\d+)/(\d+) tests passed", text)
        counts = re.search(r"OK (\d+) FAIL (\d+)", text)
        rc = re.search(r"exit (\d+)", text)
        rows.append((c, tests.group(0) if tests else "did not finish", counts.group(1) if counts else "?",
                     counts.group(2) if counts else "?", rc.group(1) if rc else "?"))
    table("test-backend-ops -b CUDA0", ["configuration", "tests", "OK", "FAIL", "exit"], rows,
          "| %s | %s | %s | %s | %s |")


def completions(results):
    rows = []
    for p in sorted(glob.glob(os.path.join(results, "completion-*.txt"))):
        tag = os.path.basename(p)[len("completion-"):-len(".txt")]
        text = read(p)
        log = read(p[:-4] + ".log") if os.path.exists(p[:-4] + ".log") else ""
        lines = [l for l in log.splitlines() if re.search(r"injected|reclaim|retry|freeing all|ggml-cuda-pool:", l)]
        rows.append((tag, hashlib.md5(text.encode()).hexdigest()[:12], len(text), len(lines),
                     lines[-1].strip()[:100] if lines else ""))
    table("llama-completion, greedy", ["run", "output md5", "chars", "pool lines", "last pool line"], rows,
          "| %s | `%s` | %d | %d | %s |")


def spread(values):
    med = statistics.median(values)
    return med, (max(values) - min(values)) / med * 100 if med else 0.0


# pools smaller than this hold what the driver's granularity (VMM, the stream-ordered pool's
# 2 MiB) makes them hold: their ratio says nothing of the pool's policy
SMALL_POOL_MIB = 4.0


def worst_pool(ps):
    ratios = [float(p["peak_reserved_mib"]) / float(p["peak_live_mib"])
              for p in ps if float(p["peak_live_mib"]) >= SMALL_POOL_MIB]
    return max(ratios) if ratios else 0.0


def bench(results):
    runs = defaultdict(dict)   # (model, kv, test, depth) -> config -> samples
    places = defaultdict(lambda: defaultdict(dict))  # (model, kv, test, depth) -> config -> round -> position
    graphs = defaultdict(lambda: defaultdict(list))  # (model, kv) -> config -> per-run counts
    # (model, kv, test, depth, config) -> [(peak_live, peak_reserved, driver_allocs, growing, worst pool)]
    pools = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(results, "bench-*.jsonl"))):
        m = BENCH_FILE.match(os.path.basename(path))
        if not m:
            continue
        model, kv, config, rnd = m.groups()
        sessions = stats_lines(path[:-len(".jsonl")] + ".stats")
        graphs[(model, kv)][config].append(graph_counts(path[:-len(".jsonl")] + ".stats"))
        for k, line in enumerate(read(path).splitlines(), start=1):
            t = json.loads(line)
            test = f"pp{t['n_prompt']}" if t["n_prompt"] else f"tg{t['n_gen']}"
            key = (model, kv, test, t["n_depth"])
            runs[key].setdefault(config, defaultdict(list))[int(rnd)].extend(t["samples_ts"])
            if POSITION in t:
                places[key][config][int(rnd)] = t[POSITION]
            if k in sessions:
                ps = sessions[k]
                pools[key + (config,)].append((
                    sum(float(p["peak_live_mib"]) for p in ps),
                    sum(float(p["peak_reserved_mib"]) for p in ps),
                    sum(int(p["driver_allocs"]) for p in ps),
                    max(float(p["growing_peak_buffer_mib"]) / float(p["growing_peak_request_mib"])
                        if float(p["growing_peak_request_mib"]) else 0.0 for p in ps),
                    worst_pool(ps)))
    if not runs:
        return
    configs = sorted({c for v in runs.values() for c in v}, key=lambda c: (c != BASELINE, c))
    print("### llama-bench t/s: median of every repetition (spread = (max - min) / median), ratio of medians to %s "
          "[%d%% bootstrap interval, rounds resampled in pairs]\n" % (BASELINE, CONFIDENCE * 100))
    print("| model | KV | test | depth | " + " | ".join(configs) + " |")
    print("|---|---|---|---|" + "---|" * len(configs))
    for key in sorted(runs, key=lambda k: (k[0], k[1], k[2], int(k[3]))):
        base = runs[key].get(BASELINE)
        base_med = statistics.median(pooled(base)) if base else None
        cells = []
        for c in configs:
            s = runs[key].get(c)
            if not s:
                cells.append("")
                continue
            samples = pooled(s)
            med, sp = spread(samples)
            ratio = ""
            if base_med and c != BASELINE:
                r, lo, hi = ratio_interval(s, base)
                ratio = f" ({r:.3f}x [{lo:.3f}, {hi:.3f}])"
            cells.append(f"{med:.1f} ±{sp:.0f}% n={len(samples)}{ratio}")
        print("| %s | %s | %s | %s | " % key + " | ".join(cells) + " |")
    print()
    position_table(runs, places, configs)
    if any(graphs.values()):
        print("### CUDA graphs per llama-bench run (every context summed; median over runs) and the pools' "
              "synchronizes\n")
        cols = GRAPH_COUNTS + ("syncs",)
        print("| model | KV | configuration | " + " | ".join(cols) + " |")
        print("|---|---|---|" + "---|" * len(cols))
        for (model, kv), per in sorted(graphs.items()):
            for c in sorted(per, key=lambda c: (c != BASELINE, c)):
                cells = [str(int(statistics.median(r[k] for r in per[c]))) for k in cols]
                print(f"| {model} | {kv} | {c} | " + " | ".join(cells) + " |")
        print()
    if pools:
        print("### pool statistics per test (every pool of the context summed; max over runs)\n")
        print("| model | KV | test | depth | configuration | peak live MiB | peak reserved MiB | reserved/live | "
              "worst pool >= %g MiB | driver allocs | growing buffer/request |" % SMALL_POOL_MIB)
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for key in sorted(pools, key=lambda k: (k[0], k[1], k[2], int(k[3]), k[4] != BASELINE, k[4])):
            v = pools[key]
            live = max(x[0] for x in v)
            resv = max(x[1] for x in v)
            drv = max(x[2] for x in v)
            grow = max(x[3] for x in v)
            worst = max(x[4] for x in v)
            ratio = f"{resv / live:.2f}x" if live else "-"
            growing = f"{grow:.2f}x" if grow else "-"
            worst_cell = f"{worst:.2f}x" if worst else "-"
            print("| %s | %s | %s | %s | %s | " % key +
                  f"{live:.1f} | {resv:.1f} | {ratio} | {worst_cell} | {drv} | {growing} |")
        print()


def position_table(runs, places, configs):
    """the ratios of rotating rounds with each process position's own effect taken out"""
    rows = {key: position_adjusted(runs[key], places[key]) for key in places}
    rows = {key: row for key, row in rows.items() if row[1]}
    if not rows:
        return
    print("### llama-bench, rotating rounds: ratio of medians to %s with each sample divided by the mean t/s at "
          "its place in the process (every configuration's) [%d%% bootstrap interval, rounds resampled in pairs]\n"
          % (BASELINE, CONFIDENCE * 100))
    others = [c for c in configs if c != BASELINE]
    print("| model | KV | test | depth | rounds | %s level | " % BASELINE + " | ".join(others) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(others))
    for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], int(k[3]))):
        rounds, ratios, level = rows[key]
        cells = ["%.3fx [%.3f, %.3f]" % ratios[c] if c in ratios else "" for c in others]
        print("| %s | %s | %s | %s | " % key + f"{rounds} | {level:.3f} | " + " | ".join(cells) + " |")
    print()


def memory(results):
    rows = {}  # (model, depth) -> config -> (peak above idle, buffer lines, exit)
    for path in sorted(glob.glob(os.path.join(results, "memory-*.txt"))):
        m = re.match(r"memory-(.+)-d(\d+)-(.+)\.txt", os.path.basename(path))
        if not m:
            continue
        model, depth, config = m.groups()
        text = read(path)
        head = re.search(r"exit (\d+) idle_mib (\d+) peak_mib (\d+)", text)
        if not head:
            continue
        rc, idle, peak = (int(x) for x in head.groups())
        buffers = "; ".join(re.sub(r"\s+", " ", l.strip()) for l in text.splitlines()[1:] if "buffer size" in l)
        rows.setdefault((model, int(depth)), {})[config] = (peak - idle, buffers, rc)
    if not rows:
        return
    print("### peak total device memory (nvidia-smi, every 50 ms, less the memory used before the run), "
          "ratio to %s\n" % BASELINE)
    configs = sorted({c for v in rows.values() for c in v}, key=lambda c: (c != BASELINE, c))
    print("| model | depth | " + " | ".join(configs) + " |")
    print("|---|---|" + "---|" * len(configs))
    for key in sorted(rows):
        base = rows[key].get(BASELINE)
        cells = []
        for c in configs:
            v = rows[key].get(c)
            if v is None:
                cells.append("")
                continue
            ratio = f" ({v[0] / base[0]:.3f}x, {v[0] - base[0]:+d})" if base and c != BASELINE and base[0] else ""
            cells.append(f"{v[0]} MiB{ratio}" + ("" if v[2] == 0 else f" exit {v[2]}"))
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    print("\nllama.cpp's buffer lines (-v), per run:\n")
    for key in sorted(rows):
        for c in configs:
            if c in rows[key]:
                print(f"- {key[0]} depth {key[1]} {c}: {rows[key][c][1]}")
    print()


def pool_calls(path):
    """a run's pool allocations and the milliseconds inside its pools' calls (None where a line has no
    call_ms), every pool of every context summed"""
    lines = pool_lines(path)
    timed = lines and all("call_ms" in kv for kv in lines)
    return sum(int(kv.get("allocs", 0)) for kv in lines), sum(float(kv["call_ms"]) for kv in lines) if timed else None


def speculative(results):
    runs = defaultdict(dict)  # config -> round -> (t/s, md5, accept)
    calls = defaultdict(list)  # config -> [(allocs, ms in pool calls)] per run with a stats file
    for path in sorted(glob.glob(os.path.join(results, "spec-*.log"))):
        m = re.match(r"spec-(.+)-r(\d+)\.log", os.path.basename(path))
        log = read(path)
        speed = re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", log)
        accept = re.search(r"accept\s+=\s+([\d.]+)%", log)
        if not m or not speed:
            continue
        text = read(path[:-4] + ".txt") if os.path.exists(path[:-4] + ".txt") else ""
        runs[m.group(1)][int(m.group(2))] = (float(speed.group(1)), hashlib.md5(text.encode()).hexdigest()[:12],
                                             accept.group(1) if accept else "?")
        if os.path.exists(path[:-4] + ".stats"):
            calls[m.group(1)].append(pool_calls(path[:-4] + ".stats"))
    if not runs:
        return
    speeds = {c: {r: [run[0]] for r, run in rounds.items()} for c, rounds in runs.items()}  # config -> round -> [t/s]
    base = speeds.get(BASELINE)
    print("### speculative decoding (llama-speculative-simple, two contexts, graphs on): decode t/s, ratio of "
          "medians to %s [%d%% bootstrap interval, rounds resampled in pairs]\n" % (BASELINE, CONFIDENCE * 100))
    print("| configuration | runs | median t/s | spread | ratio | text md5 | accepted | pool allocs/run "
          "| ms in pool calls/run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in sorted(runs, key=lambda c: (c != BASELINE, c)):
        ts = pooled(speeds[c])
        med, sp = spread(ts)
        ratio = "-"
        if base and c != BASELINE:
            r, lo, hi = ratio_interval(speeds[c], base)
            ratio = f"{r:.3f}x [{lo:.3f}, {hi:.3f}]"
        md5s = ",".join(sorted({r[1] for r in runs[c].values()}))
        accepts = ",".join(sorted({r[2] for r in runs[c].values()}))
        allocs = ",".join(str(a) for a in sorted({a for a, _ in calls[c]})) or "-"
        ms = [t for _, t in calls[c] if t is not None]
        ms_cell = f"{statistics.median(ms):.1f} ({min(ms):.1f}-{max(ms):.1f})" if ms else "-"
        print(f"| {c} | {len(ts)} | {med:.1f} | ±{sp:.0f}% | {ratio} | `{md5s}` | {accepts}% | {allocs} | {ms_cell} |")
    print()


EVAL_SPEED = re.compile(r"\beval time =.*?([\d.]+) tokens per second")


def pressure_cell(results, tag, reference):
    """a run under pressure: completed (whether its text is the unconstrained one, when it has
    one; its speed; its pools' peak; reclaims and flushes) or aborted (and where)"""
    log = read(os.path.join(results, tag + ".log"))
    rc = re.findall(r"exit (\d+)", log)
    if not rc or rc[-1] != "0":
        if "ggml-cuda-pool: alloc on device" in log:
            return "aborted: the pool's allocation"
        # ggml's CUDA_CHECK: the error, then the function; an error a kernel raised earlier shows
        # at the next call that checks, so the function alone does not say it was out of memory
        error = re.search(r"CUDA error: (.+)", log)
        where = re.search(r"current device: \d+, in function (\w+)", log)
        what = error.group(1).strip() if error else "CUDA error"
        return f"aborted: {what} in {where.group(1)}" if where else "aborted"
    parts = ["ok"]
    if reference is not None:
        parts.append("same text" if read(os.path.join(results, tag + ".txt")) == reference else "OTHER TEXT")
    speed = [m.group(1) for m in EVAL_SPEED.finditer(log)]
    if speed:
        parts.append(f"{float(speed[-1]):.0f} t/s")
    pools = pool_lines(os.path.join(results, tag + ".stats"))
    parts.append(f"pools {sum(float(kv.get('peak_reserved_mib', 0)) for kv in pools):.0f} MiB")  # every pool summed
    counts = defaultdict(int)
    for kv in pools:
        for k in ("lru_reclaims", "flushes"):
            counts[k] += int(kv.get(k, 0))
    parts += [f"{k.replace('lru_', '')} {n}" for k, n in counts.items() if n]
    return ", ".join(parts)


PRESSURE_WORKLOADS = (  # file prefix, what ran, whether it has a text to compare
    ("pressure", "llama-completion 8b-q8_0, 32k context", True),
    ("growing", "llama-batched-bench 8b-q8_0, prompts of growing length into one 32k context", False),
)


def pressure_table(results, prefix, what, has_text):
    fixed_path = os.path.join(results, prefix + "-fixed.txt")
    if not os.path.exists(fixed_path):
        return
    fixed = dict(zip(*[iter(read(fixed_path).split())] * 2))
    reference = read(os.path.join(results, prefix + "-free.txt")) if has_text else None
    runs = defaultdict(dict)  # config -> H -> cell
    for path in glob.glob(os.path.join(results, prefix + "-*-h*.log")):
        m = re.match(re.escape(prefix) + r"-(.+)-h(\d+)\.log", os.path.basename(path))
        if m:
            runs[m.group(1)][int(m.group(2))] = pressure_cell(results, path[len(results) + 1:-4], reference)
    heads = sorted({h for v in runs.values() for h in v}, reverse=True)
    print(f"### under memory pressure: free memory S + H MiB, S = {fixed['fixed_mib']} MiB (the unconstrained "
          f"run's peak less its pools' peak of {fixed['pools_mib']} MiB); {what}; - where a higher H failed "
          "already\n")
    print("| configuration | " + " | ".join(f"H = {h}" for h in heads) + " |")
    print("|---|" + "---|" * len(heads))
    for c in sorted(runs, key=lambda c: (not c.startswith(BASELINE), c)):
        print(f"| {c} | " + " | ".join(runs[c].get(h, "-") for h in heads) + " |")
    print()


def pressure(results):
    for prefix, what, has_text in PRESSURE_WORKLOADS:
        pressure_table(results, prefix, what, has_text)
    # the co-tenant runs are llama-completion's: their text is the unconstrained completion's
    free = os.path.join(results, "pressure-free.txt")
    reference = read(free) if os.path.exists(free) else None
    rows = []
    for path in sorted(glob.glob(os.path.join(results, "cotenant-*-h*.log"))):
        m = re.match(r"cotenant-(.+)-h(\d+)\.log", os.path.basename(path))
        loads = read(path[:-4] + ".loads").splitlines() if os.path.exists(path[:-4] + ".loads") else []
        rows.append((m.group(1), m.group(2), pressure_cell(results, path[len(results) + 1:-4], reference),
                     sum(l.endswith("exit 0") for l in loads), len(loads)))
    table("beside a co-tenant loading and unloading a second model (1b-q8_0), its peak added to what stays free",
          ["configuration", "H MiB", "outcome", "co-tenant loads ok", "of"], rows, "| %s | %s | %s | %d | %d |")


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "/tmp/llama-work/results"
    ops(results)
    completions(results)
    bench(results)
    memory(results)
    speculative(results)
    pressure(results)


if __name__ == "__main__":
    main()
