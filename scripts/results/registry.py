"""Every table the docs print, by name: what it shows, the files it comes from, and its
generator. A table joins with a function of its family's file and one line here (a new session's
tarball, docs/results/h200-COMMIT.tar.xz, is source.session("COMMIT"))."""

import functools

from . import benchmarks, headline, longctx, pressure, rounds, rpc, runs, serve, source, speculative, speed, text

# the rotating speed sessions, pooled; c6a7e02's rounds were split before each test kept its
# place, which llama.sh's layout of that session's rounds gives back (checked against rotate/)
SPEED = ("c6a7e02", "e14b1a3", "5238ef3", "7ce09b6", "e17176c")
LAYOUTS = {"c6a7e02": rounds.Layout(["ggml", "legacy", "plain", "vmm", "async"], [0, 4096, 32768])}


@functools.lru_cache(maxsize=None)
def bench(commit):
    return rounds.read(source.session(commit), LAYOUTS.get(commit))


def speed_sessions():
    return [(c, bench(c)) for c in SPEED]


@functools.lru_cache(maxsize=None)
def pooled():
    return rounds.pool(bench(c) for c in SPEED)


def tarballs(*commits):
    return ", ".join(f"docs/results/h200-{c}.tar.xz" for c in commits)


SPEED_FILES = tarballs(*SPEED) + ": bench-*-rN.jsonl (c6a7e02's placed from llama.sh's layout, checked against rotate/)"


class Table:
    def __init__(self, name, what, sources, render):
        self.name, self.what, self.sources, self.render = name, what, sources, render


# the session of the long-context runs (scripts/llama.sh longctx, longctx_budget); None until one ran
LONGCTX = "5e219e9"


def longctx_session():
    return source.session(LONGCTX) if LONGCTX else None


# the session of the long generation of 4096 tokens (its budget, the co-tenant beside it) and of
# the rpc step
LONGGEN = RPC = "e7ed23e"

# the session of the serve step (llama-server, a co-tenant, a fault window), of the faults step
# since a refusal fails the compute, and of memcheck over failing computes
SERVE = "5d0d1ca"


TABLES = (
    Table("headline", "Every configuration against ggml's pools: tg128 place-adjusted ratio [95% interval] at "
          "depths 0 and 32768, total device memory of a 32k context (longctx short), the least free memory "
          "above S the growing sweep completes with, the faults step, what a refusal did to llama-server (the serve "
          "step's co-tenant and fault window, the configuration's runs and its :kvpool one's)", SPEED_FILES + "; " +
          tarballs("7ce09b6", "e17176c") + ": growing-*; " + SERVE + ": completion-KIND-CASE.*, serve-*",
          lambda: headline.table(pooled(), longctx_session(), source.sessions("7ce09b6", "e17176c"),
                                 source.session(SERVE), source.session(SERVE), "0 / 32768")),
    Table("speed-rotating", "llama-bench tg128 (1b-q8_0, -fa 1, rotating rounds), five sessions pooled: ggml's t/s "
          "(median, spread) and each configuration's ratio of medians to it [95% paired bootstrap, rounds resampled]",
          SPEED_FILES, lambda: speed.rotating(pooled())),
    Table("speed-places", "The same rounds with each sample divided by the mean t/s at its place in the process "
          "(every configuration's, over the rounds drawn), and ggml's own level (1: the configurations' average)",
          SPEED_FILES, lambda: speed.places(pooled())),
    Table("speed-sessions", "The place-adjusted ratios of each session alone, and ggml's level there", SPEED_FILES,
          lambda: speed.sessions(speed_sessions())),
    Table("graph-counts", "CUDA graphs per llama-bench run (every context summed, median over runs) and the pools' "
          "synchronizes, configurations with the same counts on one row", tarballs(*SPEED) + ": bench-*-rN.stats",
          lambda: speed.graph_counts(speed_sessions())),
    Table("speculative", "Speculative decoding at c6a7e02 (llama-speculative-simple): decode t/s, ratio to ggml "
          "[95% paired interval], pool allocations and ms in pool calls per run",
          tarballs("c6a7e02") + ": spec-*-rN.log, .stats", lambda: speculative.table(source.session("c6a7e02"))),
    Table("growing", "The growing sweep under memory pressure (free memory S + H MiB): configuration x H, ok (the "
          "pools' peak reserved, their reclaims and flushes) or aborted (the reason the log gives), blank where not "
          "run; e17176c's runs where they differ from 7ce09b6's; neighbouring H that agree share a column",
          tarballs("7ce09b6", "e17176c") + ": growing-*-hH.log, .stats",
          lambda: pressure.table(source.sessions("7ce09b6", "e17176c"))),
    Table("faults", f"The faults step at {SERVE} per kind and case: how the run ended, its text against the run "
          "without faults, the pool's first recovery line", tarballs(SERVE) + ": completion-KIND-CASE.log, .txt",
          lambda: runs.faults(source.session(SERVE))),
    Table("memcheck-oom", f"compute-sanitizer memcheck over llama-completion while computes fail (the memcheck_oom "
          f"step at {SERVE}: allocations refused from the second on, ten in all)", tarballs(SERVE) +
          ": memcheck-oom-KIND-graphs-G.*", lambda: runs.memcheck_oom(source.session(SERVE))),
    Table("serve-free", f"llama-server (8b-q8_0, -np 8, 64k) under 24 mixed requests, unconstrained, at {SERVE}",
          tarballs(SERVE) + ": serve-TAG-free.*", lambda: serve.free(source.session(SERVE))),
    Table("serve-spike", f"llama-server beside a co-tenant that leaves H MiB free over the second phase, at {SERVE}",
          tarballs(SERVE) + ": serve-TAG-spike-hH.*", lambda: serve.trouble(source.session(SERVE), "spike")),
    Table("serve-window", f"llama-server through a fault window over the second phase (while=FILE), at {SERVE}",
          tarballs(SERVE) + ": serve-TAG-window.*", lambda: serve.trouble(source.session(SERVE), "window")),
    Table("ops", "test-backend-ops -b CUDA0 per session and configuration: tests passed, FAIL lines, exit status",
          tarballs("5238ef3", "e17176c", "3bfa8b8", "e7ed23e", SERVE) + ": ops-*.txt, .log",
          lambda: runs.ops(source.sessions("5238ef3", "e17176c", "3bfa8b8", "e7ed23e", SERVE))),
    Table("greedy", "Greedy generation (llama-completion, 64 tokens): the text's md5 per configuration and session",
          tarballs("c6a7e02", "e14b1a3", "5238ef3", "e17176c", "3bfa8b8", "e7ed23e", SERVE) + ": completion-CONFIG.txt",
          lambda: runs.greedy(source.sessions("c6a7e02", "e14b1a3", "5238ef3", "e17176c", "3bfa8b8", "e7ed23e",
                                              SERVE))),
    Table("longctx-prefill", "One prompt of 32768 tokens into a 32k context in ubatches of 512 (llama-bench, 8b-q8_0, "
          "KV q8_0, FA): t/s, the device's peak above idle, the pools' figures", tarballs(LONGCTX) +
          ": longctx-prefill-TAG.*", lambda: longctx.table(longctx_session(), "prefill")),
    Table("longctx-short", "A prompt of about 500 tokens and 64 generated into a 32k context (llama-completion): "
          "what each placement of the conversions holds when the context is mostly unused", tarballs(LONGCTX) +
          ": longctx-short-TAG.*", lambda: longctx.table(longctx_session(), "short")),
    Table("longctx-longgen", "A prompt of 4052 tokens, then 4096 generated greedily (llama-completion, -c 8448): the "
          "conversions grow token by token", tarballs(LONGGEN) + ": longctx-longgen-TAG.*",
          lambda: longctx.table(source.session(LONGGEN), "longgen")),
    Table("longctx-budget-longgen", "The long generation with S + H MiB left free (bisection over 96..-32, then "
          "32..0 by 8)", tarballs(LONGGEN) + ": longctx-longgen-TAG-hH.*, longctx-longgen-fixed.txt",
          lambda: longctx.budget(source.session(LONGGEN), "longgen")),
    Table("cotenant-longgen", "The long generation beside a co-tenant (1b-q8_0 llama-completion loading, generating "
          "16 tokens and exiting, over and over) with S + H + the co-tenant's peak MiB left free",
          tarballs(LONGGEN) + ": cotenant-longgen-TAG-hH.*", lambda: longctx.cotenant(source.session(LONGGEN), "longgen")),
    Table("longctx-budget", "The prefill with S + H MiB left free: each configuration's lowest H that completes "
          "(bisection), the next lower H and how it ended, and the run at the lowest", tarballs(LONGCTX) +
          ": longctx-prefill-TAG-hH.*, longctx-prefill-fixed.txt", lambda: longctx.budget(longctx_session(), "prefill")),
    Table("async-syncs", "The async kind's synchronizes in the pressure step's llama-completion, before and after "
          "reading the stream-ordered pool's usage again before a give-back", tarballs(LONGCTX) +
          ": syncs-*/pressure-async-hH.*", lambda: pressure.syncs(longctx_session())),
    Table("rpc-texts", "The rpc step's greedy texts (1b-f16, 64 tokens) per configuration on both sides: the single "
          "process, clients 1 and 2 (client, server 0 and server 1, a third of the layers each), client 5 (server 0 "
          "alone, half); and how client 4 ended when its second server was killed", tarballs(RPC) +
          ": completion-rpc-TAG-K.*, completion-TAG.txt", lambda: rpc.texts(source.session(RPC))),
    Table("rpc-servers", "What each ggml-rpc-server held after each client: its pools' snapshot lines (SIGUSR1) and "
          "its process's device memory (nvidia-smi)", tarballs(RPC) + ": rpc-TAG-serverN.stats, rpc-TAG.mem",
          lambda: rpc.servers(source.session(RPC))),
    Table("rpc-speed", "llama-bench through two servers (1b-f16, -fa 1, KV q8_0): median t/s over 2 rounds x 3 "
          "repetitions, min-max, ratio of medians to ggml's pools on both sides", tarballs(RPC) +
          ": rpc-TAG-bench-rR.jsonl", lambda: rpc.speed(source.session(RPC))),
    Table("reclaim", "LRU reclaim against a full flush on the sim driver (tools/reclaim-sim; scripts/figures.sh)",
          "docs/results/sim/reclaim.txt", lambda: text.sim("reclaim")),
    Table("bench-async", "bench-async on an H200: ns per hit pair (HitPair/kind:N, N a GGML_CPOOL_KIND_*: 1 vmm, 2 "
          "legacy, 3 plain, 4 async) and per capture-status query (api 0 the runtime's, 1 the driver's), min-max of "
          "3 runs' medians of real time, before and after the driver's capture query",
          tarballs("c6a7e02") + ": bench-async/*.json", lambda: benchmarks.bench_async(source.session("c6a7e02"))),
    Table("gpu-test", "scripts/gpu-test.sh's summary at e7ed23e (one H200; GPU_TEST_BENCH=0)", tarballs("e7ed23e") +
          ": gpu/summary.txt", lambda: text.gpu_summary(source.session("e7ed23e"))),
    Table("bench-hit", "bench-hit on the sim driver: median CPU ns per alloc + free pair by kind and cached buffers, "
          "ratio to the ggml-style pool", "docs/results/bench-hit-*.json", benchmarks.bench_hit),
    Table("demo", "The demo's pool report on the sim driver (scripts/run.sh's; scripts/figures.sh)",
          "docs/results/sim/demo.txt", lambda: text.sim("demo")),
    Table("replay-700mib", "The demo's trace replayed against every configuration at 700 MiB (scripts/figures.sh; "
          "the stranded mean, which follows the recording's timing, left out)", "docs/results/sim/replay-700mib.txt",
          lambda: text.sim("replay-700mib")),
    Table("replay-95pct", "The demo's trace replayed where its peak request fills 95% of the device (as "
          "replay-700mib)", "docs/results/sim/replay-95pct.txt", lambda: text.sim("replay-95pct")),
    Table("replay-llama", "The llama.cpp depth-sweep trace (docs/traces/llama-1b-f16-q8_0.trace.xz) replayed at "
          "8 GiB a device (scripts/figures.sh)", "docs/results/sim/replay-llama.txt", lambda: text.sim("replay-llama")),
)
BY_NAME = {t.name: t for t in TABLES}


@functools.lru_cache(maxsize=None)
def render(name):
    """NAME's table; KeyError for a name no table has"""
    return BY_NAME[name].render()
