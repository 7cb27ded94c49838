#!/usr/bin/env python3
"""No include runs up a layer: ggml-cuda/README.md's table orders the module's folders, top first;
a file may include its own folder, a folder below it, vendors/ and the public headers. adapter/
includes the public headers alone. A folder of the core library (the table's last column) does not
include ggml-cuda-pool-testing.h, whose calls only the testing library defines. Exit 1 naming
every include that breaks a rule."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(ROOT, "ggml-cuda")
ANYWHERE = {"vendors"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^    ([a-z]+)/\s.*\s(\w+)$", re.M)
TESTING_HEADER = "ggml-cuda-pool-testing.h"


def layers():
    """the folders of README.md's table, top first, each with its library"""
    with open(os.path.join(MODULE, "README.md")) as f:
        return ROW.findall(f.read())


def main():
    rows = layers()
    order = [name for name, _ in rows]
    rank = {name: i for i, name in enumerate(order)}
    core = {name for name, library in rows if library == "core"} | {"adapter"}
    found, problems = 0, []
    for folder in sorted(os.listdir(MODULE)):
        path = os.path.join(MODULE, folder)
        if not os.path.isdir(path):
            continue
        if folder not in rank and folder != "adapter":
            problems.append(f"ggml-cuda/{folder}/ is not a row of ggml-cuda/README.md's table")
            continue
        for name in sorted(os.listdir(path)):
            with open(os.path.join(path, name), errors="replace") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                found += 1
                if folder in core and os.path.basename(target) == TESTING_HEADER:
                    problems.append(f"ggml-cuda/{folder}/{name} includes \"{target}\": {folder}/ is in the core library")
                    continue
                parts = os.path.normpath(os.path.join(folder, target)).split(os.sep)
                into = parts[0] if len(parts) > 1 else None  # None: outside ggml-cuda/ or a system path
                if into is None or into == folder or into in ANYWHERE:
                    continue
                if folder == "adapter" or into not in rank or rank[into] < rank[folder]:
                    problems.append(f"ggml-cuda/{folder}/{name} includes \"{target}\": {into}/ is not below {folder}/")
    for p in problems:
        print(p)
    print(f"check-layers: {len(order)} layers, {found} includes, {len(problems)} running up")
    return 1 if problems or found == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
