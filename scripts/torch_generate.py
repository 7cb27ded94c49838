#!/usr/bin/env python3
"""Greedy generation with a Llama model under PyTorch's own CUDA allocator and under each
ggml-cuda-pool kind (the package ggml_cuda_pool_torch: pip install --no-build-isolation
./integrations/pytorch), each in a fresh process.

The model comes from a transformers config with random weights (no download): `1b` (2048 wide,
16 layers, 32/8 heads, FFN 8192, vocab 32000) or `tiny` (for the test). bf16, a random prompt,
then greedy generation. Each run reports tok/s (generated tokens over the time of generate, the
prompt's prefill included, after a short warm-up), the peak reserved bytes
(torch.cuda.max_memory_reserved for native, the pools' peak reserved otherwise), the peak live
bytes, and the driver allocations per generated token; the logits of one forward pass over the
prompt are compared bit for bit with native's, and the generated tokens too: the tokens column
counts the runs that match native's first, and native's own later runs are the control that says
whether a difference means anything.

    scripts/torch_generate.py --rounds 3                 # native and every kind, interleaved: the table
    scripts/torch_generate.py --kind legacy --config tiny  # one run in this process
    scripts/torch_generate.py --results runs.jsonl --time-limit 500   # as many runs as fit; again to go on

Exit status: 1 when a run failed or logits differ from native's, else 0 (the speed and memory
targets are printed, not enforced).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = ("native", "legacy", "plain", "vmm", "async")
CONFIGS = {
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=32000),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, vocab_size=512),
}
WARMUP_TOKENS = 8        # a first generate loads kernels and cuBLAS workspaces, outside the timing
SEED = 0                 # the weights and the prompt: the same in every process
MiB = 1024 * 1024
RESULT_PREFIX = "RESULT "  # how a run hands its figures to the driver
# the targets (the driver prints whether they are met)
SPEED_TARGET = 0.98      # the best kind's tok/s against native's
LIVE_RATIO_TARGET = 1.5  # every kind's peak reserved against its peak live


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", choices=KINDS, help="one run in this process (default: the driver, every kind)")
    p.add_argument("--kinds", default=",".join(KINDS), help="the driver's kinds, comma-separated")
    p.add_argument("--config", choices=sorted(CONFIGS), default="1b")
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens")
    p.add_argument("--gen", type=int, default=256, help="tokens generated greedily")
    p.add_argument("--rounds", type=int, default=3, help="the driver's rounds, each running every kind once")
    p.add_argument("--check-logits", metavar="PATH",
                   help="reference logits and tokens: saved there by the first run, compared by the others")
    p.add_argument("--library", help="libggml-cuda-pool-torch.so (default: the package's own)")
    p.add_argument("--results", metavar="PATH",
                   help="the driver's finished runs, one JSON line each (the reference logits beside it): "
                        "runs already there are not run again, so a later call goes on where this one stopped")
    p.add_argument("--time-limit", type=float, default=0, metavar="SECONDS",
                   help="the driver starts no run that the longest run so far says would end after this; "
                        "the table covers what finished (0: no limit)")
    return p.parse_args()


# ---- one run ------------------------------------------------------------------------------

def pool_figures(stats):
    """The module's pools on device 0, summed (one pool per stream; generate uses one)."""
    pools = [s for s in stats if s.get("device") == 0]
    return {
        "peak_reserved": sum(s["peak_reserved_mib"] for s in pools) * MiB,
        "peak_live": sum(s["peak_live_mib"] for s in pools) * MiB,
        "driver_allocs": sum(s["driver_allocs"] for s in pools),
        "pools": len(pools),
    }


def native_figures(torch):
    s = torch.cuda.memory_stats()
    return {
        "peak_reserved": torch.cuda.max_memory_reserved(),
        "peak_live": torch.cuda.max_memory_allocated(),
        "driver_allocs": s.get("num_device_alloc", s.get("segment.all.allocated", 0)),
        "pools": 1,
    }


def compare_reference(torch, path, logits, tokens):
    """'saved' (first run), or whether logits and tokens are identical to the saved ones."""
    if not os.path.exists(path):
        torch.save({"logits": logits, "tokens": tokens}, path)
        return "saved", "saved"
    ref = torch.load(path)
    same_logits = ref["logits"].shape == logits.shape and torch.equal(ref["logits"], logits)
    if same_logits:
        logits_verdict = "identical"
    elif ref["logits"].shape != logits.shape:
        logits_verdict = f"differ (shape {tuple(logits.shape)} vs {tuple(ref['logits'].shape)})"
    else:
        diff = (ref["logits"].float() - logits.float()).abs().max().item()
        logits_verdict = f"differ (max abs diff {diff:g})"
    same_tokens = ref["tokens"].shape == tokens.shape and torch.equal(ref["tokens"], tokens)
    return logits_verdict, "match" if same_tokens else "differ"


def run_one(args):
    if args.kind != "native":
        from ggml_cuda_pool_torch import pool_stats, use_ggml_cuda_pool
        use_ggml_cuda_pool(args.kind, args.library)  # before anything touches CUDA

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**CONFIGS[args.config], max_position_embeddings=args.prompt + args.gen + WARMUP_TOKENS)
    # random weights drawn on the GPU in bf16: the same seeded draws in every process, in seconds
    # where drawing them on the CPU took most of a run
    torch.manual_seed(SEED)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).eval()
    torch.set_default_dtype(torch.float32)
    generator = torch.Generator().manual_seed(SEED)
    prompt = torch.randint(config.vocab_size, (1, args.prompt), generator=generator).to("cuda")

    def figures():
        torch.cuda.synchronize()
        return native_figures(torch) if args.kind == "native" else pool_figures(pool_stats())

    def generate(tokens):
        # min_new_tokens: random weights may produce the end token early
        return model.generate(prompt, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                              pad_token_id=0, attention_mask=torch.ones_like(prompt))

    with torch.no_grad():
        logits = model(prompt).logits.cpu()
        generate(WARMUP_TOKENS)
        before = figures()
        start = time.perf_counter()
        out = generate(args.gen)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    after = figures()
    tokens = out[0, args.prompt:].cpu()

    result = {
        "kind": args.kind,
        "tok_s": args.gen / seconds,
        "peak_reserved_mib": after["peak_reserved"] / MiB,
        "peak_live_mib": after["peak_live"] / MiB,
        "driver_allocs_per_token": (after["driver_allocs"] - before["driver_allocs"]) / args.gen,
        "pools": after["pools"],
        "generated": int(tokens.numel()),
    }
    if args.check_logits:
        result["logits"], result["tokens"] = compare_reference(torch, args.check_logits, logits, tokens)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


# ---- the driver ---------------------------------------------------------------------------

def spawn(args, kind, reference):
    cmd = [sys.executable, os.path.abspath(__file__), "--kind", kind, "--config", args.config,
           "--prompt", str(args.prompt), "--gen", str(args.gen), "--check-logits", reference]
    cmd += ["--library", args.library] if args.library else []
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr passes through
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
        else:
            print(line)
    if proc.returncode != 0 or result is None:
        print(f"{kind}: the run failed (exit {proc.returncode})", file=sys.stderr)
        return None
    return result


def median_spread(values):
    """The median, and the spread as min-max and as a share of the median."""
    m = statistics.median(values)
    return m, min(values), max(values), (max(values) - min(values)) / m if m else 0.0


def table(args, kinds, runs):
    cfg = CONFIGS[args.config]
    print(f"\nconfig {args.config}: {cfg['hidden_size']} wide, {cfg['num_hidden_layers']} layers, "
          f"{cfg['num_attention_heads']}/{cfg['num_key_value_heads']} heads, FFN {cfg['intermediate_size']}, "
          f"vocab {cfg['vocab_size']}; bf16, prompt {args.prompt}, {args.gen} generated greedily; "
          f"up to {args.rounds} rounds, interleaved; medians, spread min-max, n runs")
    print(f"{'kind':8} {'n':>2} {'tok/s':>9} {'spread':>17} {'x native':>9} {'peak resv MiB':>14} {'peak live MiB':>14} "
          f"{'resv/live':>10} {'drv allocs/tok':>15} {'logits':>10} {'tokens=ref':>10}")
    summary = {}
    native_tok = None
    for kind in kinds:
        rs = runs[kind]
        if not rs:
            print(f"{kind:8} (no run completed)")
            continue
        tok, lo, hi, rel = median_spread([r["tok_s"] for r in rs])
        resv = statistics.median(r["peak_reserved_mib"] for r in rs)
        live = statistics.median(r["peak_live_mib"] for r in rs)
        drv = statistics.median(r["driver_allocs_per_token"] for r in rs)
        logits = {r.get("logits", "?") for r in rs} - {"saved"}
        compared = [r.get("tokens") for r in rs if r.get("tokens") != "saved"]
        matched = compared.count("match")
        if kind == "native":
            native_tok = tok
        ratio = tok / native_tok if native_tok else float("nan")
        summary[kind] = dict(tok=tok, ratio=ratio, resv=resv, live=live, logits=logits, tokens=(matched, len(compared)))
        print(f"{kind:8} {len(rs):2} {tok:9.1f} {f'{lo:.1f}-{hi:.1f} ({rel:.1%})':>17} {ratio:9.3f} {resv:14.1f} {live:14.1f} "
              f"{resv / live if live else float('nan'):10.2f} {drv:15.3f} {'/'.join(sorted(logits)) or 'reference':>10} "
              f"{f'{matched}/{len(compared)}' if compared else 'reference':>10}")
    return summary


def tokens_line(summary):
    """What the tokens column can say: native's own later runs against its first (the reference)
    are the control. Where they differ, or there is none, a kind's differing tokens say nothing of
    its allocator (with random weights the top logits nearly tie, and two native processes on an
    H200 generated different tokens from identical logits)."""
    matched, compared = summary.get("native", {}).get("tokens", (0, 0))
    if compared == 0:
        return ("tokens: no second native run to compare with (the reference is native's first run), so the "
                "column cannot tell an allocator's effect from run-to-run variation; --rounds 2 or more gives one")
    if matched < compared:
        return (f"tokens: native's own runs differ from the reference in {compared - matched} of {compared}, so "
                f"differing tokens under a kind say nothing of its allocator (the logits column does)")
    return (f"tokens: native's own runs match the reference ({compared} of {compared}), so a kind whose tokens "
            f"differ generated differently")


def verdict(summary):
    """Prints whether the targets are met; False when logits differ."""
    differ = [k for k, s in summary.items() if s["logits"] - {"identical"}]
    print("logits: " + ("identical under every allocator" if not differ else "DIFFER under " + ", ".join(differ)))
    print(tokens_line(summary))
    native = summary.get("native")
    kinds = {k: s for k, s in summary.items() if k != "native"}
    if native and kinds:
        within = {k: s for k, s in kinds.items() if s["resv"] <= native["resv"]}
        best_name, best = max((within or kinds).items(), key=lambda kv: kv[1]["tok"])
        ok = best["ratio"] >= SPEED_TARGET and best["resv"] <= native["resv"]
        print(f"best kind: {best_name}, {best['ratio']:.3f}x native tok/s, peak reserved {best['resv']:.1f} MiB "
              f"against native's {native['resv']:.1f}: {'meets' if ok else 'misses'} the target "
              f"(>= {SPEED_TARGET}x, reserved <= native's)")
    loose = [f"{k} {s['resv'] / s['live']:.2f}x" for k, s in kinds.items() if s["live"] and s["resv"] > LIVE_RATIO_TARGET * s["live"]]
    print(f"peak reserved within {LIVE_RATIO_TARGET}x of peak live: " + ("every kind" if not loose else "not " + ", ".join(loose)))
    return not differ


def load_results(path, kinds, rounds):
    """The runs a --results file holds, by kind, and the (round, kind) pairs they cover."""
    runs, done = {k: [] for k in kinds}, set()
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r["kind"] in runs and r["round"] < rounds and (r["round"], r["kind"]) not in done:
                    runs[r["kind"]].append(r)
                    done.add((r["round"], r["kind"]))
    return runs, done


def run_line(r):
    live = r["peak_live_mib"]
    return (f"round {r['round'] + 1} {r['kind']}: {r['tok_s']:.1f} tok/s, peak reserved {r['peak_reserved_mib']:.1f} MiB, "
            f"peak live {live:.1f} MiB ({r['peak_reserved_mib'] / live if live else float('nan'):.2f}x), "
            f"logits {r.get('logits')}, tokens {r.get('tokens')}"
            + (f", process {r['process_s']:.0f} s" if "process_s" in r else ""))


def drive(args):
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        sys.exit(f"unknown kinds: {', '.join(sorted(unknown))}")
    if "native" in kinds:  # first, so the reference logits are native's
        kinds.remove("native")
        kinds.insert(0, "native")
    runs, done = load_results(args.results, kinds, args.rounds)
    failed = 0
    stopped = None
    started = time.monotonic()
    longest = 0.0  # the longest run so far: what the next one is expected to take
    with tempfile.TemporaryDirectory() as tmp:
        reference = args.check_logits or (args.results + ".reference.pt" if args.results
                                          else os.path.join(tmp, "reference.pt"))
        pending = [(r, k) for r in range(args.rounds) for k in kinds if (r, k) not in done]
        for r, kind in pending:
            if args.time_limit and time.monotonic() - started + longest > args.time_limit:
                stopped = (r, kind)
                break
            t0 = time.monotonic()
            result = spawn(args, kind, reference)
            elapsed = time.monotonic() - t0
            longest = max(longest, elapsed)
            if result is None:
                failed += 1
                continue
            result["process_s"] = elapsed
            result["round"] = r
            runs[kind].append(result)
            if args.results:
                with open(args.results, "a") as f:
                    f.write(json.dumps(result) + "\n")
            print(run_line(result), flush=True)
    if stopped:
        print(f"time limit: {len(pending) - pending.index(stopped)} runs not started (next: round {stopped[0] + 1} "
              f"{stopped[1]})" + (f"; run again with --results {args.results} to go on" if args.results else ""))
    identical = verdict(table(args, kinds, runs))
    return 0 if identical and not failed else 1


def main():
    args = parse_args()
    return run_one(args) if args.kind else drive(args)


if __name__ == "__main__":
    sys.exit(main())
