#!/usr/bin/env python3
"""Speed beside PyTorch's own CUDA allocator: PyTorch's caching allocator (native) and each
ggml-cuda-pool kind of the package ggml_cuda_pool_torch (pip install --no-build-isolation
./integrations/pytorch), each run a fresh process (the allocator is chosen before CUDA starts),
every configuration once a round, each round starting one configuration further along.

A run measures, in this order:
  step  training steps of a small transformer (forward, backward and AdamW, eager: no CUDA graphs),
        bf16 autocast, the sequence length drawn anew each step so that the sizes vary: ms a step;
  pair  torch.empty of mixed sizes (log-uniform from 512 B to 64 MiB) then del, back to back: ns a
        pair, the median of its blocks; under a kind the blocks again with the module's timing on,
        whose call_ms is the module's own time a pair (the rest of a pair is PyTorch's: its
        dispatch, its pluggable-allocator layer, and the library's lock and records).

    scripts/torch_bench.py                                      # every configuration, 3 rounds: the table
    scripts/torch_bench.py --results runs.jsonl --time-limit 150   # the runs that fit; again to go on
    scripts/torch_bench.py --config legacy                      # one run in this process: a RESULT line

Exit status: 1 when a run failed, else 0 (the goal is printed, not enforced). The summary and its
lines are shared with the docs' table (scripts/results/torchbench.py).
"""

import argparse
import importlib.util
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

CONFIGS = ("native", "legacy", "vmm", "plain", "async")
BASELINE = "native"
GOAL_KINDS = ("legacy", "vmm")  # whose step time the goal is about
GOAL = 1.05                     # step time within 5% of native's
# the small transformer: 6 layers 512 wide (8 heads, FFN 2048), a vocabulary of 8192, batches of 16
MODEL = dict(vocab=8192, width=512, heads=8, layers=6, ff=2048, batch=16, dropout=0.1)
SEQ = (64, 512)           # a step's sequence length, drawn uniformly
WARMUP_STEPS = 5          # the first at the longest length, so that the timed steps find grown pools
STEPS = 60
LR = 1e-4
SMALLEST, LARGEST = 512, 64 << 20  # the pair loop's sizes
PAIRS = 20000             # a block of the pair loop
BLOCKS = 5                # timed blocks (after one untimed)
SEED = 0                  # lengths, tokens, weights and sizes: the same in every process
MiB = 1 << 20
RESULT_PREFIX = "RESULT "


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=CONFIGS, help="one run in this process")
    p.add_argument("--configs", default=",".join(CONFIGS), help="the driver's configurations, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--library", help="libggml-cuda-pool-torch.so (default: the one in the package)")
    p.add_argument("--results", metavar="PATH", help="finished runs, one JSON line each: a later call runs only "
                                                     "what is missing")
    p.add_argument("--time-limit", type=float, default=0, metavar="SECONDS",
                   help="start no run that the longest so far says would end after this (0: no limit)")
    return p.parse_args(argv)


# ---- one run ------------------------------------------------------------------------------

def allocator(torch, kind):
    """(driver allocations, peak reserved MiB, module ms in calls, allocations) now"""
    torch.cuda.synchronize()
    if kind == BASELINE:
        s = torch.cuda.memory_stats()
        return s.get("num_device_alloc", 0), torch.cuda.max_memory_reserved() / MiB, 0.0, s["allocation.all.allocated"]
    from ggml_cuda_pool_torch import pool_stats
    pools = [p for p in pool_stats() if p["device"] == 0]
    return tuple(sum(p[k] for p in pools) for k in ("driver_allocs", "peak_reserved_mib", "call_ms", "allocs"))


def transformer(torch):
    nn, m = torch.nn, MODEL

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(m["vocab"], m["width"])
            layer = nn.TransformerEncoderLayer(m["width"], m["heads"], m["ff"], m["dropout"], batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, m["layers"], enable_nested_tensor=False)
            self.head = nn.Linear(m["width"], m["vocab"])

        def forward(self, x):
            return self.head(self.blocks(self.embed(x)))
    return Net()


def training(torch, kind):
    """ms a step over STEPS, after WARMUP_STEPS; driver allocations a step"""
    torch.manual_seed(SEED)
    model = transformer(torch).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    rng = random.Random(SEED)
    lengths = [SEQ[1]] + [rng.randint(*SEQ) for _ in range(WARMUP_STEPS + STEPS - 1)]
    data = torch.Generator(device="cuda").manual_seed(SEED)

    def step(n):
        tokens = torch.randint(MODEL["vocab"], (MODEL["batch"], n + 1), device="cuda", generator=data)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for n in lengths[:WARMUP_STEPS]:
        step(n)
    before = allocator(torch, kind)
    t0 = time.perf_counter()
    for n in lengths[WARMUP_STEPS:]:
        step(n)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    after = allocator(torch, kind)
    return {"step_ms": seconds * 1e3 / STEPS, "step_drv_allocs": (after[0] - before[0]) / STEPS,
            "peak_reserved_mib": after[1]}


def pair_blocks(torch, sizes, blocks):
    """ns a pair of each block"""
    empty, u8, dev = torch.empty, torch.uint8, torch.device("cuda")
    ns = []
    for _ in range(blocks):
        t0 = time.perf_counter_ns()
        for n in sizes:
            t = empty(n, dtype=u8, device=dev)
            del t
        ns.append((time.perf_counter_ns() - t0) / len(sizes))
    return ns


def pairs(torch, kind):
    """ns a pair (median of the blocks); under a kind, the module's own ns a pair while timed"""
    rng = random.Random(SEED)
    sizes = [int(SMALLEST * (LARGEST / SMALLEST) ** rng.random()) for _ in range(PAIRS)]
    pair_blocks(torch, sizes, 1)  # every size once: the pools grown
    before = allocator(torch, kind)
    r = {"pair_ns": statistics.median(pair_blocks(torch, sizes, BLOCKS)),
         "pair_drv_allocs": allocator(torch, kind)[0] - before[0]}
    if kind != BASELINE:
        from ggml_cuda_pool_torch import timing
        timing(True)
        before = allocator(torch, kind)
        r["timed_pair_ns"] = statistics.median(pair_blocks(torch, sizes, BLOCKS))
        after = allocator(torch, kind)
        timing(False)
        r["module_ns"] = (after[2] - before[2]) * 1e6 / (after[3] - before[3])
    return r


def run_one(args):
    library = None
    if args.config != BASELINE:
        from ggml_cuda_pool_torch import use_ggml_cuda_pool
        library = use_ggml_cuda_pool(args.config, args.library)  # before anything touches CUDA
    import torch
    result = {"config": args.config, **training(torch, args.config), **pairs(torch, args.config),
              "library": library, "device": torch.cuda.get_device_name(), "torch": torch.__version__}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


# ---- the summary, which the docs' table shares --------------------------------------------

def spread(values):
    """(median, min, max)"""
    return statistics.median(values), min(values), max(values)


def summary(runs):
    """{config: its figures over its runs}, in CONFIGS' order; ratios are of medians to native's"""
    rows = {}
    for config in [c for c in CONFIGS if runs.get(c)]:
        rs = runs[config]
        row = {"n": len(rs), "step": spread([r["step_ms"] for r in rs]), "pair": spread([r["pair_ns"] for r in rs]),
               "resv": statistics.median(r["peak_reserved_mib"] for r in rs),
               "drv": statistics.median(r["step_drv_allocs"] for r in rs)}
        if config != BASELINE:
            row["module"] = statistics.median(r["module_ns"] for r in rs)
            row["timed"] = statistics.median(r["timed_pair_ns"] for r in rs)
        rows[config] = row
    base = rows.get(BASELINE)
    for row in rows.values():
        row["step_x"] = row["step"][0] / base["step"][0] if base else math.nan
        row["pair_x"] = row["pair"][0] / base["pair"][0] if base else math.nan
    return rows


def verdicts(rows):
    """the goal's line and, for each kind, what its pairs cost beyond native's and where"""
    base = rows.get(BASELINE)
    if base is None:
        return ["no native run: no ratio"]
    goal = [f"{k} {rows[k]['step_x']:.3f}x" for k in GOAL_KINDS if k in rows]
    met = all(rows[k]["step_x"] <= GOAL for k in GOAL_KINDS if k in rows) and len(goal) == len(GOAL_KINDS)
    lines = [f"goal, step time within {GOAL - 1:.0%} of native's for {' and '.join(GOAL_KINDS)}: "
             f"{', '.join(goal) or 'not run'}: {'met' if met else 'NOT met'}"]
    for kind, row in rows.items():
        if kind == BASELINE:
            continue
        extra = row["pair"][0] - base["pair"][0]
        layer = extra - row["module"]  # at least this: native's pair holds its own allocator's time too
        said = (f"{kind}: a pair costs {extra:+.0f} ns against native's {base['pair'][0]:.0f}; the module's own "
                f"calls take {row['module']:.0f} ns of a pair")
        if layer <= 0:
            lines.append(f"{said}, as much as the difference or more")
            continue
        where = "more than" if layer > row["module"] else "less than"
        lines.append(f"{said}, so PyTorch's pluggable-allocator layer and the library's wrapper take at least "
                     f"{layer:.0f} ns, {where} the module")
    return lines


def table(rows):
    print(f"{'config':7} {'n':>2} {'step ms':>8} {'min-max':>13} {'x native':>8} {'pair ns':>8} {'min-max':>11} "
          f"{'x native':>8} {'module ns':>9} {'timed pair':>10} {'peak resv MiB':>13} {'drv allocs/step':>15}")
    for config, r in rows.items():
        step, pair = r["step"], r["pair"]
        module, timed = (f"{r[k]:.0f}" if k in r else "-" for k in ("module", "timed"))
        print(f"{config:7} {r['n']:2} {step[0]:8.2f} {f'{step[1]:.2f}-{step[2]:.2f}':>13} {r['step_x']:8.3f} "
              f"{pair[0]:8.0f} {f'{pair[1]:.0f}-{pair[2]:.0f}':>11} {r['pair_x']:8.3f} {module:>9} {timed:>10} "
              f"{r['resv']:13.1f} {r['drv']:15.2f}")


# ---- the driver ---------------------------------------------------------------------------

def order(configs, rounds):
    """(round, config) as they run: every configuration once a round, each round one further along"""
    return [(r, configs[(r + i) % len(configs)]) for r in range(rounds) for i in range(len(configs))]


def spawn(args, config):
    cmd = [sys.executable, os.path.abspath(__file__), "--config", config]
    cmd += ["--library", args.library] if args.library else []
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr passes through
    found = [line[len(RESULT_PREFIX):] for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not found:
        print(f"{config}: the run failed (exit {proc.returncode})", file=sys.stderr)
        return None
    return json.loads(found[-1])


def load(path):
    """the runs a --results file holds"""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def missing(args, configs):
    """why the runs cannot start: no torch, or no package for the kinds; None when they can"""
    if importlib.util.find_spec("torch") is None:
        return f"{sys.executable} cannot import torch"
    if set(configs) - {BASELINE} and not args.library and importlib.util.find_spec("ggml_cuda_pool_torch") is None:
        return "ggml_cuda_pool_torch is not installed: pip install --no-build-isolation ./integrations/pytorch"
    return None


def drive(args):
    configs = [c for c in args.configs.split(",") if c]
    if set(configs) - set(CONFIGS):
        sys.exit(f"unknown configurations: {', '.join(sorted(set(configs) - set(CONFIGS)))}")
    why = missing(args, configs)
    if why:
        sys.exit(why)
    done = load(args.results)
    finished = {(r["round"], r["config"]) for r in done}
    pending = [rc for rc in order(configs, args.rounds) if rc not in finished]
    started, longest, failed, left = time.monotonic(), 0.0, 0, 0
    for i, (r, config) in enumerate(pending):
        if args.time_limit and time.monotonic() - started + longest > args.time_limit:
            left = len(pending) - i
            break
        t0 = time.monotonic()
        result = spawn(args, config)
        longest = max(longest, time.monotonic() - t0)
        if result is None:
            failed += 1
            continue
        result.update(round=r, process_s=time.monotonic() - t0)
        done.append(result)
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(result) + "\n")
        print(f"round {r + 1} {config}: {result['step_ms']:.2f} ms a step, {result['pair_ns']:.0f} ns a pair"
              + (f" (the module's own {result['module_ns']:.0f})" if "module_ns" in result else "")
              + f", process {result['process_s']:.0f} s", flush=True)
    if left:
        print(f"time limit: {left} runs not started" + (f"; again with --results {args.results} to go on"
                                                         if args.results else ""))
    runs = {c: [r for r in done if r["config"] == c and r["round"] < args.rounds] for c in configs}
    rows = summary(runs)
    first = done[0] if done else {}
    print(f"\n{first.get('device', '?')}, torch {first.get('torch', '?')}; medians over rounds, min-max; "
          f"ratios of medians to native's")
    table(rows)
    print("\n".join(verdicts(rows)))
    return 1 if failed else 0


def main():
    args = parse_args()
    return run_one(args) if args.config else drive(args)


if __name__ == "__main__":
    sys.exit(main())
