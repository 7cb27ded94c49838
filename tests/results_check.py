"""What the checks of scripts/results/ share: the package imported from the scripts folder named
first on the command line, a results folder made up in memory, a table's cells by column, and
one line per check (script_check.py's)."""

import re
import sys

sys.path.insert(0, sys.argv[1])

from results import source  # noqa: E402
from script_check import check  # noqa: E402,F401  (re-exported)


def folder(files, label="made-up"):
    """a results folder of the given {name: text}"""
    return source.Folder(label, files, lambda name: files[name].encode())


def cells(table, first):
    """{column: cell} of the table's first row whose first cell is `first`"""
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header = [h.strip() for h in lines[0].strip("|").split("|")]
    for line in lines[2:]:
        row = [c.strip() for c in line.strip("|").split("|")]
        if row[0] == first:
            return dict(zip(header, row))
    return {}


def interval(cell):
    """(ratio, low, high) of a cell '1.002 [0.979, 1.024]'"""
    m = re.search(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", cell or "")
    return tuple(float(x) for x in m.groups()) if m else (0.0, 0.0, 0.0)
