#!/usr/bin/env python3
"""A table of the docs against its source files: `pairs`' figure per alloc+free pair, with and
without each pool's first call, from stats lines made up here; `growing` (the growing sweep under
memory pressure) regenerated from docs/results/h200-7ce09b6.tar.xz and h200-e17176c.tar.xz must read as
tests/results/growing.md does. And the generated blocks of a page (tests/results/blocks.md, a copy
of it): `results.py check` names the stale block and the unknown one, exit 1; `results.py tables`
rewrites the stale one from its files, leaving the text around it and the unknown block as they
are, and still fails for the unknown one; a page whose blocks all match: check says so, exit 0; a
block left open is refused, the file left as it is.

    check-results-table.py SCRIPTS_DIR TESTS_RESULTS_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile

from results_check import check
from results import pairs, registry, source  # noqa: E402  (results_check puts it on the path)

SCRIPTS, FIXTURES = sys.argv[1:3]


def results_py(*args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, "results.py"), *args], capture_output=True, text=True)


def read(path):
    with open(path) as f:
        return f.read()


def check_growing():
    got, want = registry.render("growing"), read(os.path.join(FIXTURES, "growing.md"))
    check(got == want, "growing from its tarballs reads as tests/results/growing.md", got)


def check_blocks(tmp):
    page = os.path.join(tmp, "page.md")
    shutil.copy(os.path.join(FIXTURES, "blocks.md"), page)
    before = read(page)
    done = results_py("check", page)
    check(done.returncode == 1 and "ops is stale" in done.stdout and "unknown table no-such-table" in done.stdout
          and read(page) == before, "check names the stale block and the unknown one, writing nothing",
          done.stdout + done.stderr)
    done = results_py("tables", page)
    after = read(page)
    ops = "<!-- generated: ops -->\n" + registry.render("ops") + "<!-- /generated -->\n"
    check(done.returncode == 1 and ops in after and "12987/12988" not in after, "tables rewrites the stale block "
          "and fails for the unknown one", done.stdout + done.stderr + after)
    outside = [line for line in before.splitlines() if line.startswith("Text") or "no-such-table" in line]
    check(all(line in after.splitlines() for line in outside), "the text around the blocks stays", after)
    done = results_py("check", page)
    check(done.returncode == 1 and "stale" not in done.stdout, "check then names the unknown block alone",
          done.stdout)
    fresh = os.path.join(tmp, "fresh.md")
    with open(fresh, "w") as f:
        f.write("Text.\n" + ops)
    done = results_py("check", fresh)
    check(done.returncode == 0 and done.stdout == "check: all 1 generated blocks match their files\n",
          "check says so when every block matches", done.stdout + done.stderr)
    with open(page, "a") as f:
        f.write("<!-- generated: ops -->\n")
    before = read(page)
    done = results_py("tables", page)
    check(done.returncode == 1 and "not closed" in done.stdout and read(page) == before,
          "a block left open: refused, the file left as it is", done.stdout + done.stderr)


def check_pairs():
    line = "ggml-cuda-pool stats: context=1 device=0 slot={s} pool=vmm allocs={a} hits={a} call_ms={ms}{first}\n"
    two = (line.format(s=0, a=1001, ms="1.100", first=" first_call_ms=1.000") +
           line.format(s=1, a=101, ms="0.110", first=" first_call_ms=0.100"))
    check(abs(pairs.per_pair(two) - 1.21e6 / 1102) < 1e-6, "per pair: every call", pairs.per_pair(two))
    check(abs(pairs.per_pair(two, True) - 0.11e6 / 1100) < 1e-6, "without each pool's first call: its time and "
          "its pair out", pairs.per_pair(two, True))
    unused = line.format(s=2, a=0, ms="0.000", first=" first_call_ms=0.000")
    check(abs(pairs.per_pair(two + unused, True) - 0.11e6 / 1100) < 1e-6, "a pool that never allocated has no first "
          "call to take out", pairs.per_pair(two + unused, True))
    old = line.format(s=0, a=1001, ms="1.100", first="")
    check(pairs.per_pair(old, True) is None, "lines that do not give the first call: no figure", pairs.per_pair(old, True))
    # each run from the newest session that holds it: the server's rounds from the older one here
    serving = source.Folder("a", ["serve-r1/serve-ggml-free.stats"], lambda name: two.encode())
    bench = source.Folder("b", ["pairs-ggml-r1.stats"], lambda name: two.encode())
    runs = [row.split(" | ")[0] for row in pairs.table([serving, bench]).splitlines() if " | ggml | " in row]
    check(runs == ["| llama-server (a)", "| graphs-off llama-bench (b)"], "each run from its newest session", runs)


if __name__ == "__main__":
    check_pairs()
    check_growing()
    with tempfile.TemporaryDirectory() as tmp:
        check_blocks(tmp)
