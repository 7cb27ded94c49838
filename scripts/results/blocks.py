"""The generated blocks of the docs: a table in README.md or docs/*.md sits between the lines

    <!-- generated: NAME -->
    <!-- /generated -->

and `scripts/results.py tables` rewrites what lies between them from NAME's generator
(scripts/results/registry.py); `scripts/results.py check` names every block that differs."""

import os
import re

START = re.compile(r"<!-- generated: (\S+) -->")
END = "<!-- /generated -->"


class Block:
    def __init__(self, name, first, last, body):
        self.name, self.first, self.last, self.body = name, first, last, body  # lines [first, last) are body


def parse(text, where):
    """the blocks of a markdown text; ValueError where a block is not closed or nests"""
    lines = text.splitlines(keepends=True)
    found, open_ = [], None
    for i, line in enumerate(lines):
        m = START.fullmatch(line.strip())
        if m:
            if open_:
                raise ValueError(f"{where}:{i + 1}: a block inside {open_[0]}'s")
            open_ = (m.group(1), i + 1)
        elif line.strip() == END:
            if not open_:
                raise ValueError(f"{where}:{i + 1}: {END} without its start")
            found.append(Block(open_[0], open_[1], i, "".join(lines[open_[1]:i])))
            open_ = None
    if open_:
        raise ValueError(f"{where}:{open_[1]}: block {open_[0]} is not closed")
    return found


def rewrite(text, where, render):
    """(the text with every block's body rendered anew, [problems]); render(name) gives a body or
    raises KeyError for an unknown name, which leaves the block as it is and counts as a problem"""
    lines = text.splitlines(keepends=True)
    problems = []
    for block in reversed(parse(text, where)):
        try:
            body = render(block.name)
        except KeyError:
            problems.append(f"{where}:{block.first}: unknown table {block.name}")
            continue
        if body != block.body:
            problems.append(f"{where}:{block.first}: {block.name} is stale")
            lines[block.first:block.last] = [body]
    return "".join(lines), list(reversed(problems))


def markdown_files(root):
    """README.md and every .md under docs/, relative to root"""
    found = ["README.md"] if os.path.exists(os.path.join(root, "README.md")) else []
    for top, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        found += sorted(os.path.relpath(os.path.join(top, f), root) for f in files if f.endswith(".md"))
    return found
