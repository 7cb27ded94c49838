"""scripts/torch_bench.py's runs, a session's torch/torch-bench.jsonl: PyTorch's caching allocator
and each kind, ms a training step and ns a torch.empty + del pair (medians, min-max over the
rounds, ratios of medians to native's), the module's own ns a pair, and the lines under the table
(the goal, where a pair's cost lies), all from the bench's own summary."""

import torch_bench  # scripts/, which results.py puts on the path

from . import markdown

FILE = "torch/torch-bench.jsonl"
COLUMNS = ("configuration", "runs", "ms a step (min-max)", "step / native's", "ns a pair (min-max)",
           "pair / native's", "the module's ns a pair", "peak reserved MiB", "driver allocations a step")


def table(folder):
    """the table of the newest session holding the family; a line saying there is none yet"""
    if folder is None:
        return "No GPU session holds its runs yet (`scripts/torch_bench.py --results FILE`).\n"
    found = folder.json_lines(FILE)
    rows = torch_bench.summary({c: [r for r in found if r["config"] == c] for c in torch_bench.CONFIGS})
    cells = []
    for config, r in rows.items():
        step, pair = r["step"], r["pair"]
        cells.append([config, str(r["n"]), f"{step[0]:.2f} ({step[1]:.2f}-{step[2]:.2f})", f"{r['step_x']:.3f}",
                      f"{pair[0]:.0f} ({pair[1]:.0f}-{pair[2]:.0f})", f"{r['pair_x']:.3f}",
                      f"{r['module']:.0f}" if "module" in r else "-", f"{r['resv']:.1f}", f"{r['drv']:.2f}"])
    head = (f"{found[0]['device']}, torch {found[0]['torch']}, {max(r['round'] for r in found) + 1} rounds at "
            f"{folder.label}:\n\n")
    lines = "".join(f"- {line}\n" for line in torch_bench.verdicts(rows))
    return head + markdown.table(COLUMNS, cells) + "\n" + lines
