"""Every table the docs print, by name: what it shows, the files it comes from, and its
generator. A table reads one family of files (FAMILIES) from the GPU sessions that hold it, as
each session's docs/results/CARD-COMMIT.json declares (scripts/results/source.py): a table of
several sessions takes every session holding its family, oldest first; a table of one session
takes the newest. A new session is its tarball and its JSON file; a new table, a function of its
family's file and one entry here."""

import collections
import functools
import os

from . import (benchmarks, headline, longctx, pairs, pressure, rounds, rpc, runs, serve, soak, source, speculative,
               speed, text, torchbench)

FAMILIES = ("speed", "speculative", "growing", "faults", "memcheck-oom", "serve", "stretch", "spikes", "ops", "greedy",
            "longctx", "syncs", "longgen", "rpc", "bench-async", "gpu-test", "pairs", "torch-bench")


def declared():
    """the sessions' JSON files, in date order; ValueError for a family no table reads"""
    found = source.declared()
    for d in found:
        unknown = sorted(set(d.families) - set(FAMILIES))
        if unknown:
            raise ValueError(f"{d.path}: no table reads {', '.join(unknown)}")
    return found


SESSIONS = declared()
LAYOUTS = {d.commit: rounds.Layout(d.layout["configs"], d.layout["depths"]) for d in SESSIONS if d.layout}


def holding(family):
    """the commits of the sessions that hold the family, oldest first"""
    return [d.commit for d in SESSIONS if family in d.families]


def at(family):
    """the newest session holding the family (None where none does)"""
    return (holding(family) or [None])[-1]


def folder(family):
    return source.session(at(family)) if at(family) else None


def folders(family):
    return [source.session(c) for c in holding(family)]


@functools.lru_cache(maxsize=None)
def bench(commit):
    return rounds.read(source.session(commit), LAYOUTS.get(commit))


def speed_sessions():
    return [(c, bench(c)) for c in holding("speed")]


@functools.lru_cache(maxsize=None)
def pooled():
    return rounds.pool(bench(c) for c in holding("speed"))


def tarballs(*commits):
    return ", ".join(os.path.relpath(source.session_path(c), source.ROOT) for c in commits)


def files(family, what, newest=False):
    """'tarballs: what' of the sessions a table reads"""
    return f"{tarballs(*([at(family)] if newest else holding(family)))}: {what}"


def count(n):
    return ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")[n] if n < 10 else str(n)


PLACED = [c for c in holding("speed") if c in LAYOUTS]
SPEED_FILES = files("speed", "bench-*-rN.jsonl" + (f" ({', '.join(PLACED)}'s placed from llama.sh's layout, "
                                                   "checked against rotate/)" if PLACED else ""))
GROWING = holding("growing")
LATER = f"; {', '.join(GROWING[1:])}'s runs where they differ from {GROWING[0]}'s" if len(GROWING) > 1 else ""
SERVE_FILES = f"{files('faults', 'completion-KIND-CASE.*', True)}; {files('stretch', 'serve-TAG-*-wW*')}"


# what: a sentence of the listing; sources: the files it comes from; render: () -> the Markdown
Table = collections.namedtuple("Table", "name what sources render")


TABLES = (
    Table("headline", "Every configuration against ggml's pools: tg128 place-adjusted ratio [95% interval] at "
          "depths 0 and 32768, total device memory of a 32k context (longctx short), the least free memory "
          "above S the growing sweep completes with, the faults step, what became of llama-server's requests through "
          f"a co-tenant or fault window of W s, W at most the pools' wait ({serve.WAIT_S} s, short) or longer (the serve "
          "step's stretches of every session, the configuration's runs and its variants' but :lazy)", SPEED_FILES + "; " +
          files("growing", "growing-*; ") + SERVE_FILES,
          lambda: headline.table(pooled(), folder("longctx"), folders("growing"), folder("faults"), folders("stretch"),
                                 "0 / 32768")),
    Table("speed-rotating", "llama-bench tg128 (1b-q8_0, -fa 1, rotating rounds), "
          f"{count(len(holding('speed')))} sessions pooled: ggml's t/s "
          "(median, spread) and each configuration's ratio of medians to it [95% paired bootstrap, rounds resampled]",
          SPEED_FILES, lambda: speed.rotating(pooled())),
    Table("speed-places", "The same rounds with each sample divided by the mean t/s at its place in the process "
          "(every configuration's, over the rounds drawn), and ggml's own level (1: the configurations' average)",
          SPEED_FILES, lambda: speed.places(pooled())),
    Table("speed-sessions", "The place-adjusted ratios of each session alone, and ggml's level there", SPEED_FILES,
          lambda: speed.sessions(speed_sessions())),
    Table("graph-counts", "CUDA graphs per llama-bench run (every context summed, median over runs) and the pools' "
          "synchronizes, configurations with the same counts on one row", files("speed", "bench-*-rN.stats"),
          lambda: speed.graph_counts(speed_sessions())),
    Table("speculative", f"Speculative decoding at {at('speculative')} (llama-speculative-simple): decode t/s, ratio to ggml "
          "[95% paired interval], pool allocations and ms in pool calls per run",
          files("speculative", "spec-*-rN.log, .stats", True), lambda: speculative.table(folder("speculative"))),
    Table("growing", "The growing sweep under memory pressure (free memory S + H MiB): configuration x H, ok (the "
          "pools' peak reserved, their reclaims and flushes) or aborted (the reason the log gives), blank where not "
          f"run{LATER}; neighbouring H that agree share a column", files("growing", "growing-*-hH.log, .stats"),
          lambda: pressure.table(folders("growing"))),
    Table("faults", f"The faults step at {at('faults')} per kind and case: how the run ended, its text against the run "
          "without faults, the pool's first recovery line", files("faults", "completion-KIND-CASE.log, .txt", True),
          lambda: runs.faults(folder("faults"))),
    Table("memcheck-oom", f"compute-sanitizer memcheck over llama-completion while computes fail (the memcheck_oom "
          f"step at {at('memcheck-oom')}: allocations refused from the second on, ten in all)",
          files("memcheck-oom", "memcheck-oom-KIND-graphs-G.*", True), lambda: runs.memcheck_oom(folder("memcheck-oom"))),
    Table("pairs", "Time inside the pools per alloc+free pair, each run at the newest session that holds it: "
          "llama-server (8b-q8_0, -np 8, 64k, 24 mixed requests, unconstrained) and graphs-off llama-bench (1b-q8_0, "
          "tg128, -fa 1, 3 repetitions), the configurations interleaved in each round",
          files("pairs", "serve-rR/serve-CONFIG-free.stats, pairs-CONFIG-rR.stats", False),
          lambda: pairs.table(folders("pairs"))),
    Table("serve-free", f"llama-server (8b-q8_0, -np 8, 64k) under 24 mixed requests, unconstrained, at {at('serve')}",
          files("serve", "serve-TAG-free.*", True), lambda: serve.free(folder("serve"))),
    Table("serve-spike", f"llama-server beside a co-tenant that leaves H MiB free over the second phase, at {at('serve')}",
          files("serve", "serve-TAG-spike-hH.*", True), lambda: serve.trouble(folder("serve"), "spike")),
    Table("serve-window", f"llama-server through a fault window over the second phase (while=FILE), at {at('serve')}",
          files("serve", "serve-TAG-window.*", True), lambda: serve.trouble(folder("serve"), "window")),
    Table("serve-stretch", f"llama-server (8b-q8_0, -np 8, 64k, 24 mixed requests) through a co-tenant or a fault "
          f"window of fixed length W, mid-run or from start-up, the pools waiting up to {serve.WAIT_S} s unless "
          ":nowait, per session", files("stretch", "serve-TAG-spike-hH-wW[-start].*, serve-TAG-window-wW[-start].*"),
          lambda: serve.timed(folders("stretch"))),
    Table("serve-spikes", "llama-servers side by side under mixed requests for minutes, calm and beside the same "
          "random co-tenant spikes (scripts/spikes.py), per session",
          files("spikes", "serve-TAG-soak-CASE.*, soak-spikes.jsonl"), lambda: soak.table(folders("spikes"))),
    Table("ops", "test-backend-ops -b CUDA0 per session and configuration: tests passed, FAIL lines, exit status",
          files("ops", "ops-*.txt, .log"), lambda: runs.ops(folders("ops"))),
    Table("greedy", "Greedy generation (llama-completion, 64 tokens): the text's md5 per configuration and session",
          files("greedy", "completion-CONFIG.txt"), lambda: runs.greedy(folders("greedy"))),
    Table("longctx-prefill", "One prompt of 32768 tokens into a 32k context in ubatches of 512 (llama-bench, 8b-q8_0, "
          "KV q8_0, FA): t/s, the device's peak above idle, the pools' figures",
          files("longctx", "longctx-prefill-TAG.*", True), lambda: longctx.table(folder("longctx"), "prefill")),
    Table("longctx-short", "A prompt of about 500 tokens and 64 generated into a 32k context (llama-completion): "
          "what each placement of the conversions holds when the context is mostly unused",
          files("longctx", "longctx-short-TAG.*", True), lambda: longctx.table(folder("longctx"), "short")),
    Table("longctx-longgen", "A prompt of 4052 tokens, then 4096 generated greedily (llama-completion, -c 8448): the "
          "conversions grow token by token", files("longgen", "longctx-longgen-TAG.*", True),
          lambda: longctx.table(folder("longgen"), "longgen")),
    Table("longctx-budget-longgen", "The long generation with S + H MiB left free (bisection over 96..-32, then "
          "32..0 by 8)", files("longgen", "longctx-longgen-TAG-hH.*, longctx-longgen-fixed.txt", True),
          lambda: longctx.budget(folder("longgen"), "longgen")),
    Table("cotenant-longgen", "The long generation beside a co-tenant (1b-q8_0 llama-completion loading, generating "
          "16 tokens and exiting, over and over) with S + H + the co-tenant's peak MiB left free",
          files("longgen", "cotenant-longgen-TAG-hH.*", True), lambda: longctx.cotenant(folder("longgen"), "longgen")),
    Table("longctx-budget", "The prefill with S + H MiB left free: each configuration's lowest H that completes "
          "(bisection), the next lower H and how it ended, and the run at the lowest",
          files("longctx", "longctx-prefill-TAG-hH.*, longctx-prefill-fixed.txt", True),
          lambda: longctx.budget(folder("longctx"), "prefill")),
    Table("async-syncs", "The async kind's synchronizes in the pressure step's llama-completion, before and after "
          "reading the stream-ordered pool's usage again before a give-back",
          files("syncs", "syncs-*/pressure-async-hH.*", True), lambda: pressure.syncs(folder("syncs"))),
    Table("rpc-texts", "The rpc step's greedy texts (1b-f16, 64 tokens) per configuration on both sides: the single "
          "process, clients 1 and 2 (client, server 0 and server 1, a third of the layers each), client 5 (server 0 "
          "alone, half); and how client 4 ended when its second server was killed",
          files("rpc", "completion-rpc-TAG-K.*, completion-TAG.txt", True), lambda: rpc.texts(folder("rpc"))),
    Table("rpc-servers", "What each ggml-rpc-server held after each client: its pools' snapshot lines (SIGUSR1) and "
          "its process's device memory (nvidia-smi)", files("rpc", "rpc-TAG-serverN.stats, rpc-TAG.mem", True),
          lambda: rpc.servers(folder("rpc"))),
    Table("rpc-speed", "llama-bench through two servers (1b-f16, -fa 1, KV q8_0): median t/s over 2 rounds x 3 "
          "repetitions, min-max, ratio of medians to ggml's pools on both sides",
          files("rpc", "rpc-TAG-bench-rR.jsonl", True), lambda: rpc.speed(folder("rpc"))),
    Table("torch-bench", "scripts/torch_bench.py: PyTorch's caching allocator and each kind through the package, "
          "each run a fresh process, every configuration once a round: ms a training step of a small transformer "
          "(forward, backward, AdamW; bf16 autocast, the sequence length drawn each step, no CUDA graphs), ns a "
          "torch.empty + del pair of mixed sizes (512 B to 64 MiB), the module's own ns a pair (its timing), peak "
          "reserved, driver allocations a step", files("torch-bench", torchbench.FILE, True) if at("torch-bench")
          else f"a session's {torchbench.FILE} (none yet)", lambda: torchbench.table(folder("torch-bench"))),
    Table("reclaim", "LRU reclaim against a full flush on the sim driver (tools/reclaim-sim; scripts/figures.sh)",
          "docs/results/sim/reclaim.txt", lambda: text.sim("reclaim")),
    Table("bench-async", "bench-async on an H200: ns per hit pair (HitPair/kind:N, N a GGML_CPOOL_KIND_*: 1 vmm, 2 "
          "legacy, 3 plain, 4 async) and per capture-status query (api 0 the runtime's, 1 the driver's), min-max of "
          "3 runs' medians of real time, before and after the driver's capture query",
          files("bench-async", "bench-async/*.json", True), lambda: benchmarks.bench_async(folder("bench-async"))),
    Table("gpu-test", f"scripts/gpu-test.sh's summary at {at('gpu-test')} (one H200; GPU_TEST_BENCH=0)",
          files("gpu-test", "gpu/summary.txt", True), lambda: text.gpu_summary(folder("gpu-test"))),
    Table("bench-hit", "bench-hit on the sim driver: median CPU ns per alloc + free pair by kind and cached buffers, "
          "ratio to the ggml-style pool", "docs/results/bench-hit-*.json", benchmarks.bench_hit),
    Table("bench-hit-vmm", "The same, ratio to the pool shaped like ggml's VMM pool (the runs that timed it)",
          "docs/results/bench-hit-*.json", lambda: benchmarks.bench_hit("ggml-vmm-style")),
    Table("bench-hit-cold", "bench-hit's cold family on the H200's host CPU: median clock ns per alloc + free pair, "
          "each call timed alone after an eviction, ratio to the pool shaped like ggml's VMM pool",
          "docs/results/bench-hit-h200-*.json", lambda: benchmarks.bench_hit("ggml-vmm-style", "cold",
                                                                           "bench-hit-h200-*.json")),
    Table("demo", "The demo's pool report on the sim driver (scripts/run.sh's; scripts/figures.sh)",
          "docs/results/sim/demo.txt", lambda: text.sim("demo")),
    Table("replay-700mib", "The demo's trace replayed against every configuration at 700 MiB (scripts/figures.sh; "
          "the stranded mean, which follows the recording's timing, left out)", "docs/results/sim/replay-700mib.txt",
          lambda: text.sim("replay-700mib")),
    Table("replay-95pct", "The demo's trace replayed where its peak request fills 95% of the device (as "
          "replay-700mib)", "docs/results/sim/replay-95pct.txt", lambda: text.sim("replay-95pct")),
    Table("replay-torch", "torch_bench's training run under legacy (docs/traces/torch-training-legacy.trace.xz, one "
          "H100) replayed at the H100's 79 GiB (scripts/figures.sh)", "docs/results/sim/replay-torch.txt",
          lambda: text.sim("replay-torch")),
    Table("replay-llama", "The llama.cpp depth-sweep trace (docs/traces/llama-1b-f16-q8_0.trace.xz) replayed at "
          "8 GiB a device (scripts/figures.sh)", "docs/results/sim/replay-llama.txt", lambda: text.sim("replay-llama")),
)
BY_NAME = {t.name: t for t in TABLES}


@functools.lru_cache(maxsize=None)
def render(name):
    """NAME's table; KeyError for a name no table has"""
    return BY_NAME[name].render()
