"""The tables of one results folder (scripts/llama.sh summary): every table family that finds
its files there, each under a heading."""

from . import pairs, pressure, rounds, runs, serve, soak, speculative, speed


def sections(folder):
    """[(heading, table)] of the families with files in the folder"""
    bench = rounds.read(folder)
    names = folder.names()

    def has(prefix, suffix=""):
        return any(n.startswith(prefix) and n.endswith(suffix) for n in names)
    found = [
        ("test-backend-ops -b CUDA0", has("ops-", ".txt"), lambda: runs.ops([folder])),
        ("llama-completion, greedy: the text's md5", has("completion-", ".txt"), lambda: runs.greedy([folder])),
        ("faults: how each run ended, its text against the run without faults, the first recovery line",
         has("completion-", ".log"), lambda: runs.faults(folder)),
        ("llama-bench t/s: ggml's median and spread, ratio of medians to ggml [95% paired bootstrap]",
         bool(bench.runs), lambda: speed.rotating(bench)),
        ("llama-bench, rotating rounds, each sample over the mean t/s at its place in the process",
         bool(speed.placed(bench)), lambda: speed.places(bench)),
        ("CUDA graphs per llama-bench run and the pools' synchronizes", bool(bench.graphs),
         lambda: speed.graph_counts([(folder.label, bench)])),
        ("time inside the pools per alloc+free pair", has("pairs-", ".stats") or has("serve-r", "-free.stats"),
         lambda: pairs.table([folder])),
        ("speculative decoding", has("spec-", ".log"), lambda: speculative.table(folder)),
        ("under memory pressure, prompts of growing length", has("growing-", ".log"),
         lambda: pressure.table([folder])),
        ("llama-server, unconstrained", has("serve-", "-free.jsonl"), lambda: serve.free(folder)),
        ("llama-server, a co-tenant over the during phase", bool(serve.spikes(folder)),
         lambda: serve.trouble(folder, "spike")),
        ("llama-server, a fault window over the during phase", has("serve-", "-window.jsonl"),
         lambda: serve.trouble(folder, "window")),
        ("llama-server, a stretch of fixed length", bool(serve.timed_cases(folder)), lambda: serve.timed([folder])),
        ("llama-server for minutes, calm and beside random memory spikes (latency over the calm run's)",
         bool(soak.configs(folder)), lambda: soak.table([folder])),
    ]
    return [(heading, render()) for heading, present, render in found if present]


def text(folder):
    return "".join(f"### {heading}\n\n{table}\n" for heading, table in sections(folder) if table)
