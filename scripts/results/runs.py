"""Correctness runs of scripts/llama.sh: test-backend-ops per configuration (ops-CONFIG.txt and
.log), greedy generation per configuration (completion-CONFIG.txt), and the faults step per
module kind and case (completion-KIND-CASE.log and .txt against the run without faults)."""

import hashlib
import re

from . import lines, logs, markdown, stats

FAULT_CASES = ("oneshot", "prob", "persistent", "capture")
# a faults step's run (CASE-COMMIT: an earlier build's, as capture-dd10397)
FAULT_RUN = rf"completion-(.+?)-((?:{'|'.join(FAULT_CASES)})(?:-[\w-]+)?)\.log"
# the faults and soak steps' runs, and the rpc step's clients, which are no single-process greedy runs
NOT_GREEDY = rf"rpc-.+|.+?-(?:{'|'.join(FAULT_CASES + ('soak', 'nofault'))})(?:-[\w-]+)?"


def md5(text):
    return hashlib.md5(text.encode()).hexdigest()[:12]


def greedy_runs(folder):
    """{config: text} of the greedy runs, the fault runs left out"""
    return {m.group(1): folder.text(name) for name, m in folder.match(r"completion-(.+)\.txt")
            if not re.fullmatch(NOT_GREEDY, m.group(1))}


def greedy(folders):
    """the md5 of each configuration's text, a row a session"""
    runs = {f.label: greedy_runs(f) for f in folders}
    configs = stats.config_order({c for texts in runs.values() for c in texts})
    rows = [[label] + [f"`{md5(texts[c])}`" if c in texts else "" for c in configs]
            for label, texts in runs.items() if texts]
    return markdown.table(["session"] + configs, rows)


def case_order(case):
    base = case.split("-")[0]
    return (FAULT_CASES.index(base) if base in FAULT_CASES else len(FAULT_CASES), case)


def fault_row(folder, kind, case, name):
    log = folder.text(name)
    why = logs.aborted(log)
    text, reference = folder.text(name[:-len(".log")] + ".txt"), folder.text(f"completion-{kind}.txt")
    same = "-" if not text or reference is None else "same" if text == reference else "DIFFERS"
    recovery = logs.recovery_lines(log)
    ended = "completed"
    if why and logs.compute_failed(log):  # the compute failed, llama.cpp ended the run itself
        ended = f"failed: {why} (exit {logs.exit_status(log)})"
    elif why:
        ended = f"aborted: {why}"
    if ended != "completed":
        same = "-"  # a run that ended early wrote at most its prompt
    return [kind, case, ended, same, f"`{recovery[0]}`" if recovery else "-"]


def faults(folder):
    """every fault run of a session: how it ended, its text against the run without faults, the
    pool's first recovery line"""
    found = [(m.group(1), m.group(2), name) for name, m in folder.match(FAULT_RUN)]
    kinds = stats.kind_order({k for k, _, _ in found})
    found.sort(key=lambda f: (kinds.index(f[0]), case_order(f[1])))
    rows = [fault_row(folder, kind, case, name) for kind, case, name in found]
    return markdown.table(["kind", "case", "run", "text", "first recovery line"], rows) if rows else ""


def ops_row(folder, config):
    text, log = folder.text(f"ops-{config}.txt"), folder.text(f"ops-{config}.log", "")
    passed = re.search(r"(\d+)/(\d+) tests passed", text)
    counts = re.search(r"OK (\d+) FAIL (\d+)", text)
    rc = re.search(r"exit (\d+)\s*$", log[-200:])
    return [folder.label, config, f"{passed.group(1)}/{passed.group(2)}" if passed else "did not finish",
            counts.group(2) if counts else "?", rc.group(1) if rc else "?"]


def ops(folders):
    """test-backend-ops -b CUDA0 per session and configuration: tests passed, FAIL lines, exit"""
    rows = []
    for folder in folders:
        configs = [m.group(1) for _, m in folder.match(r"ops-(.+)\.txt")]
        rows += [ops_row(folder, c) for c in stats.kind_order(configs)]
    return markdown.table(["session", "configuration", "tests passed", "FAIL", "exit"], rows)


def memcheck_oom(folder):
    """the memcheck_oom step: per kind and graphs setting, the computes that failed, what memcheck
    said (its summary lines are on stdout, the .txt) and how llama-completion ended"""
    rows = []
    for name, m in folder.match(r"memcheck-oom-(.+)-graphs-(on|off)\.log"):
        log, out = folder.text(name), folder.text(name[:-len(".log")] + ".txt", "")
        errors = re.search(r"ERROR SUMMARY: (\d+ errors?)", out)
        leaked = re.search(r"LEAK SUMMARY: (.+)", out)
        failed = lines.failed_computes(folder.text(name[:-len(".log")] + ".stats", ""))
        rows.append([m.group(1), m.group(2), str(failed), errors.group(1) if errors else "?",
                     leaked.group(1).strip() if leaked else "?", f"exit {logs.exit_status(log)}"])
    return markdown.table(["kind", "CUDA graphs", "computes failed", "memcheck", "leaks", "llama-completion"], rows)
