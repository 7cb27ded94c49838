#!/usr/bin/env python3
"""scripts/torch_generate.py's driver without torch: each run is faked (10 s on a fake clock), so
this checks that --time-limit starts no run that would end after the limit, that --results keeps
what finished, and that a second call runs only what is missing, in round order, native first;
and that the tokens column's verdict rests on native's own later runs (the control).

    check-torch-driver.py PATH/TO/torch_generate.py
"""

import json
import os
import sys
import tempfile

from script_check import captured, check, load_script

RUN_SECONDS = 10.0


class FakeRuns:
    """Stands in for spawn() and time.monotonic(): every run moves the clock by RUN_SECONDS."""

    def __init__(self, native_tokens="match"):
        self.now = 0.0
        self.calls = []
        self.native_tokens = native_tokens  # what native's runs after the reference report

    def monotonic(self):
        return self.now

    def spawn(self, args, kind, reference):
        self.now += RUN_SECONDS
        first = not os.path.exists(reference)
        if first:
            open(reference, "w").close()
        self.calls.append(kind)
        return {"kind": kind, "tok_s": 100.0, "peak_reserved_mib": 12.0, "peak_live_mib": 10.0,
                "driver_allocs_per_token": 0.0, "pools": 1, "generated": 4,
                "logits": "saved" if first else "identical",
                "tokens": "saved" if first else self.native_tokens if kind == "native" else "match"}


def drive(tg, fake, argv):
    tg.spawn = fake.spawn
    tg.time.monotonic = fake.monotonic
    sys.argv = ["torch_generate.py"] + argv
    return captured(tg.drive, tg.parse_args())


def main():
    tg = load_script(sys.argv[1], "torch_generate")
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "runs.jsonl")
        common = ["--kinds", "legacy,native,vmm", "--rounds", "2", "--results", results]

        first = FakeRuns()
        rc, out = drive(tg, first, common + ["--time-limit", "25"])
        check(rc == 0, "a call stopped by the time limit exits 0", out)
        check(first.calls == ["native", "legacy"], "the limit stops before a run that would end after it "
              "(10 s runs, 25 s: two runs), native first", out)
        check("4 runs not started (next: round 1 vmm)" in out, "it says what was not started", out)
        with open(results) as f:
            kept = [json.loads(line) for line in f]
        check([(r["round"], r["kind"]) for r in kept] == [(0, "native"), (0, "legacy")],
              "the finished runs are kept with their round", out)

        second = FakeRuns()
        rc, out = drive(tg, second, common)
        check(rc == 0, "the second call exits 0", out)
        check(second.calls == ["vmm", "native", "legacy", "vmm"], "the second call runs only what is missing, "
              "in round order", out)
        rows = {line.split()[0]: line.split()[1] for line in out.splitlines()
                if line.split() and line.split()[0] in ("native", "legacy", "vmm")}
        check(rows == {"native": "2", "legacy": "2", "vmm": "2"}, "the table covers both calls' runs", out)
        check("logits: identical under every allocator" in out, "the verdict reads the kept runs' logits", out)

        check("tokens: native's own runs match the reference (1 of 1)" in out,
              "native's second run is the tokens column's control", out)

        third = FakeRuns()
        rc, out = drive(tg, third, common)
        check(third.calls == [], "with every run kept, nothing runs again", out)

    rc, out = drive(tg, FakeRuns(native_tokens="differ"), ["--kinds", "native,vmm", "--rounds", "2"])
    check("native's own runs differ from the reference in 1 of 1" in out and rc == 0,
          "native's own differing tokens are said, and fail nothing", out)
    rc, out = drive(tg, FakeRuns(), ["--kinds", "native,vmm", "--rounds", "1"])
    check("no second native run to compare with" in out, "one round has no control, and says so", out)


if __name__ == "__main__":
    main()
