"""Tables that are a tool's text output, shown as it printed it: the sim driver's reports
(scripts/figures.sh runs pool-demo and pool-replay and keeps their output under
docs/results/sim/, without what follows a run's timing, so that the files come out the same on
every run) and a session's gpu-test summary."""

import difflib
import os
import re
import sys

from . import markdown, source

SIM = os.path.join(source.RESULTS, "sim")


def untimed(text):
    """the output of a replay of a trace recorded just now, without what follows the recording's
    timing: the span of the trace, the time measured inside the module, the stranded mean column"""
    text = re.sub(r" over [\d.]+ ms", "", text)
    text = re.sub(r", [\d.]+ ms inside the module \(measured\), \d+ ns a call", "", text)
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if "mean MiB" in line), None)
    if header is None:
        return text
    end = lines[header].index("mean MiB") + len("mean MiB")
    start = end - len(" mean MiB")
    table_end = next((i for i in range(header, len(lines)) if not lines[i].strip()), len(lines))
    for i in range(header - 1, table_end):
        lines[i] = lines[i][:start] + lines[i][end:]
    return "\n".join(lines) + "\n"


def tidy(text):
    """trailing blanks dropped, the trace and JSON files named without their directory (the build's)"""
    text = re.sub(r"(?<!\S)\S+/(?=[\w.-]+\.(?:trace|json)\b)", "", text)
    return "".join(line.rstrip() + "\n" for line in text.rstrip("\n").splitlines())


def write_sim(name, text, timed=True, check=False):
    """docs/results/sim/NAME.txt from a tool's output; check: compare instead, printing the difference.
    Whether the file holds it now"""
    path, new = os.path.join(source.ROOT, SIM, name + ".txt"), tidy(text if timed else untimed(text))
    old = open(path).read() if os.path.exists(path) else ""
    if check and old != new:
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), path, "its tool now"))
    elif not check:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(new)
    return not check or old == new


def sim(name):
    with open(os.path.join(source.ROOT, SIM, name + ".txt")) as f:
        return markdown.code(f.read())


def gpu_summary(folder):
    return markdown.code(folder.text("gpu/summary.txt"))
