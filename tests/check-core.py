#!/usr/bin/env python3
"""The core library holds no test machinery: no object of ggml-cuda/testing/ (the sim driver, the
leak ledger, the calls of ggml-cuda-pool-testing.h) and none of their symbols, while the full
library holds them all (the negative control: a check that found nothing there would pass
anything). Exit 1 naming what is out of place.

    check-core.py NM CORE_LIBRARY FULL_LIBRARY TESTING_HEADER
"""

import os
import re
import subprocess
import sys

# what only ggml-cuda/testing/ defines, as nm -C prints it
TESTING_SYMBOL = re.compile(r"\bgcp::(\w+::|\(anonymous namespace\)::)*(sim_\w+|ledger\w*)")
# the objects of ggml-cuda/testing/
TESTING_OBJECT = re.compile(r"^(sim[\w-]*|capi-testing|ledger|seam)\.cpp\.o$")
API = re.compile(r"GGML_CPOOL_API\b[^;(]*?\b(ggml_cpool_\w+)\s*\(")


def testing_calls(header):
    """the functions ggml-cuda-pool-testing.h declares"""
    with open(header) as f:
        return set(API.findall(f.read()))


def contents(nm, library):
    """(object names, defined symbols) of an archive, demangled"""
    out = subprocess.run([nm, "-C", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    objects, symbols = set(), set()
    for line in out.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            objects.add(line[:-1])
            continue
        parts = line.split(" ", 2)  # address, type, name
        if len(parts) == 3:
            symbols.add(parts[2])
    return objects, symbols


def machinery(objects, symbols, calls):
    """what of the testing part a library holds, one line each"""
    found = [f"object {o}" for o in sorted(objects) if TESTING_OBJECT.match(o)]
    found += [f"testing call {s}" for s in sorted(symbols) if s in calls]
    found += [f"symbol {s}" for s in sorted(symbols) if TESTING_SYMBOL.search(s)]
    return found


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    nm, core, full, header = sys.argv[1:]
    calls = testing_calls(header)
    problems = []
    if not calls:
        problems.append(f"{header}: no GGML_CPOOL_API call read")
    objects, symbols = contents(nm, full)
    missing = sorted(calls - symbols)
    problems += [f"{os.path.basename(full)} lacks the testing call {c}" for c in missing]
    if not any(TESTING_SYMBOL.search(s) for s in symbols):
        problems.append(f"{os.path.basename(full)}: no sim driver or ledger symbol seen (the check sees nothing)")
    objects, symbols = contents(nm, core)
    found = machinery(objects, symbols, calls)
    problems += [f"{os.path.basename(core)} holds {what}" for what in found]
    for p in problems[:40]:
        print(p)
    if len(problems) > 40:
        print(f"... and {len(problems) - 40} more")
    print(f"check-core: {len(calls)} testing calls, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
