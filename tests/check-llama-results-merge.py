#!/usr/bin/env python3
"""scripts/llama-results-merge.py on two made-up sessions: each ran rounds 1 and 2 of llama-bench
(ggml's pools and legacy, a stats file each) and round 1 of speculative decoding. Merged, the
second session's rounds must follow the first's (3 and 4; speculative 3), every file's content
that of its source, so that a round keeps its configurations together and the sessions' rounds
never pair; --drop must leave out exactly the configuration of the folder it names. Refused,
writing nothing: a folder without round files, a --drop of a configuration the folder lacks, an
output folder that holds rounds already.

    check-llama-results-merge.py PATH/TO/llama-results-merge.py
"""

import os
import sys
import tempfile

from script_check import captured, check, load_script

CONFIGS = ("ggml", "legacy")


def write_session(folder, tag):
    """files whose content names the session, the configuration and the round"""
    os.makedirs(folder)
    for rnd in (1, 2):
        for config in CONFIGS:
            for ext in ("jsonl", "stats"):
                with open(os.path.join(folder, f"bench-1b-q8_0-f16-{config}-r{rnd}.{ext}"), "w") as f:
                    f.write(f"{tag} {config} {rnd}\n")
    for config in CONFIGS:
        with open(os.path.join(folder, f"spec-{config}-r1.log"), "w") as f:
            f.write(f"{tag} {config} 1\n")
    with open(os.path.join(folder, "completion-ggml.txt"), "w") as f:
        f.write("not a round\n")


def content(path):
    with open(path) as f:
        return f.read().strip()


def main():
    merge = load_script(sys.argv[1], "llama_results_merge")
    with tempfile.TemporaryDirectory() as tmp:
        a, b, out = os.path.join(tmp, "a"), os.path.join(tmp, "b"), os.path.join(tmp, "out")
        write_session(a, "A")
        write_session(b, "B")
        rc, log = captured(merge.main, [out, a, b])
        check(rc == 0, "two sessions merge", log)
        names = sorted(os.listdir(out))
        want = {f"bench-1b-q8_0-f16-{c}-r{r}.{e}": f"{t} {c} {r0}" for c in CONFIGS for e in ("jsonl", "stats")
                for t, r0, r in (("A", 1, 1), ("A", 2, 2), ("B", 1, 3), ("B", 2, 4))}
        want.update({f"spec-{c}-r{r}.log": f"{t} {c} 1" for c in CONFIGS for t, r in (("A", 1), ("B", 3))})
        check(names == sorted(want), f"the second session's rounds follow the first's: {names}", log)
        got = {n: content(os.path.join(out, n)) for n in names}
        check(got == want, "every file is its source's", str(got))

        out2 = os.path.join(tmp, "out2")
        rc, log = captured(merge.main, [out2, a, b, "--drop", f"legacy@{b}"])
        names = sorted(os.listdir(out2))
        check(rc == 0 and not any("legacy-r3" in n or "legacy-r4" in n for n in names)
              and "bench-1b-q8_0-f16-legacy-r2.jsonl" in names and "bench-1b-q8_0-f16-ggml-r4.jsonl" in names,
              f"--drop leaves out one configuration of one folder: {names}", log)

        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        for args, what in (([os.path.join(tmp, "out3"), a, empty], "a folder without rounds"),
                           ([os.path.join(tmp, "out4"), a, "--drop", f"vmm@{a}"], "a --drop of a missing configuration"),
                           ([out, a], "an output folder holding rounds")):
            target = args[0]
            before = sorted(os.listdir(target)) if os.path.exists(target) else None
            rc, log = captured(merge.main, args)
            after = sorted(os.listdir(target)) if os.path.exists(target) else None
            check(rc == 1 and after == before, f"refused, nothing written: {what}", log)

if __name__ == "__main__":
    main()
