#!/usr/bin/env python3
"""scripts/torch_bench.py without torch: each run is faked (10 s on a fake clock, figures made up per
configuration), so this checks that every configuration runs once a round, each round one further
along; that --time-limit starts no run that would end after it; that --results keeps what finished
and a second call runs only what is missing, in that order; that the summary takes medians and
min-max over rounds and ratios of medians to native's; that the goal line says met or not; that a
kind's line puts a pair's cost beyond native's in the module or in PyTorch's layer as the figures
say, and claims no layer where the module's time covers it; and that the docs' table
(scripts/results/torchbench.py) reads a session's runs the same way.

    check-torch-bench.py PATH/TO/scripts
"""

import json
import os
import sys
import tempfile

from script_check import captured, check, load_script

RUN_SECONDS = 10.0
SCRIPTS = sys.argv[1]
sys.path.insert(0, SCRIPTS)
import torch_bench as tb  # noqa: E402
from results import source, torchbench  # noqa: E402

# per configuration: ms a step and ns a pair in round 0 (later rounds add 1% a round), the module's ns
FIGURES = {"native": (10.0, 4000, None), "legacy": (10.2, 4600, 50), "vmm": (10.1, 4500, 300),
           "plain": (10.3, 4600, 50), "async": (11.0, 5000, 400)}


class FakeRuns:
    """Stands in for spawn() and time.monotonic(): every run moves the clock by RUN_SECONDS; a
    configuration's figures grow by 1% with each of its runs, over every instance."""
    made = []

    def __init__(self):
        self.now, self.calls = 0.0, []

    def monotonic(self):
        return self.now

    def spawn(self, args, config):
        self.now += RUN_SECONDS
        step, pair, module = FIGURES[config]
        drift = 1 + 0.01 * FakeRuns.made.count(config)
        FakeRuns.made.append(config)
        self.calls.append(config)
        r = {"config": config, "step_ms": step * drift, "step_drv_allocs": 0.0, "peak_reserved_mib": 100.0,
             "pair_ns": pair * drift, "pair_drv_allocs": 0, "device": "Fake GPU", "torch": "0.0"}
        if module is not None:
            r.update(module_ns=module, timed_pair_ns=pair + 100)
        return r


def drive(fake, argv):
    tb.missing = lambda args, configs: None  # torch and the package, as far as the faked runs go
    tb.spawn = fake.spawn
    tb.time.monotonic = fake.monotonic
    return captured(tb.drive, tb.parse_args(argv))


def main():
    want = ["native", "legacy", "vmm", "legacy", "vmm", "native"]
    check(tb.order(["native", "legacy", "vmm"], 2) == list(zip([0, 0, 0, 1, 1, 1], want)),
          "every configuration once a round, each round one further along", tb.order(["native", "legacy", "vmm"], 2))
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "runs.jsonl")
        fake = FakeRuns()
        rc, out = drive(fake, ["--rounds", "3", "--results", results, "--time-limit", "75"])
        check(rc == 0 and len(fake.calls) == 7 and "time limit: 8 runs not started" in out,
              "the time limit starts no run that would end after it", out)
        fake = FakeRuns()
        rc, out = drive(fake, ["--rounds", "3", "--results", results])
        check(fake.calls == [c for _, c in tb.order(list(tb.CONFIGS), 3)][7:], "a second call runs what is missing, "
              "in order", fake.calls)
        rows = tb.summary({c: [r for r in tb.load(results) if r["config"] == c] for c in tb.CONFIGS})
        step = rows["legacy"]["step"]
        check(rows["native"]["n"] == 3 and abs(step[0] - 10.2 * 1.01) < 1e-9 and step[1] == 10.2 and
              abs(rows["legacy"]["step_x"] - 1.02) < 1e-9, "medians, min-max and ratios of medians", rows["legacy"])
        lines = tb.verdicts(rows)
        check("legacy 1.020x, vmm 1.010x: met" in lines[0], "the goal is met within 5%", lines[0])
        check("legacy: a pair costs +606 ns against native's 4040" in out and "at least 556 ns, more than the module"
              in out and "at least 205 ns, less than the module" in out, "where a pair's cost lies, as the figures say",
              out)
        level = dict(rows, vmm=dict(rows["vmm"], pair=rows["native"]["pair"]))
        check("vmm: a pair costs +0 ns against native's 4040; the module's own calls take 300 ns of a pair, as much "
              "as the difference or more" in tb.verdicts(level), "a pair no dearer than native's: no layer claimed",
              tb.verdicts(level))
        slow = dict(rows, vmm=dict(rows["vmm"], step_x=1.06))
        check("NOT met" in tb.verdicts(slow)[0], "a kind 6% slower misses the goal", tb.verdicts(slow)[0])

        os.makedirs(os.path.join(tmp, "session", "torch"))
        os.rename(results, os.path.join(tmp, "session", torchbench.FILE))
        md = torchbench.table(source.directory(os.path.join(tmp, "session"), "abc1234"))
        check(md.startswith("Fake GPU, torch 0.0, 3 rounds at abc1234") and "| legacy | 3 | 10.30 (10.20-10.40) | 1.020 |"
              in md and "- goal, step time within 5%" in md, "the docs' table reads the session's runs", md)
        check(torchbench.table(None).startswith("No GPU session"), "no session: a line saying so", "")
        json.dumps(rows)  # the summary is plain data


if __name__ == "__main__":
    main()
