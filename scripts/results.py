#!/usr/bin/env python3
"""The results of GPU sessions and the tables the docs print from them (scripts/results/).

    results.py split RESULTS PREFIX ROUND   split a rotating llama-bench round by configuration
    results.py summary DIR|TARBALL          the tables of one results folder, Markdown on stdout
    results.py show NAME                    one generated table
    results.py tables [FILE...]             rewrite every generated block, and docs/results/TABLES.md
    results.py tables --list                the listing of every table (docs/results/TABLES.md)
    results.py check [FILE...]              exit 1 naming each stale block or unknown table, else how many match
    results.py sim NAME [--untimed] [--check] docs/results/sim/NAME.txt from a tool's output on stdin
                                            (--check: exit 1, with the difference, where it differs)

A generated block is a table in README.md or docs/*.md between `<!-- generated: NAME -->` and
`<!-- /generated -->`; FILE... (default: every such file) are the files tables and check read.
A GPU session is its tarball, docs/results/h200-COMMIT.tar.xz, and h200-COMMIT.json beside it,
which names the table families it holds (scripts/results/source.py); adding one edits no code.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from results import blocks, registry, source, split, summary, text  # noqa: E402  (the package beside)

LISTING = os.path.join(source.RESULTS, "TABLES.md")
LISTING_HEAD = """# Generated tables

Every table below comes from the files under docs/results by `scripts/results.py tables`
(`scripts/figures.sh` remakes docs/results/sim/ first). To show one in README.md or docs/*.md,
paste its block, markers included; `scripts/results.py check` (ctest `results-check`) fails
when a block there no longer matches its files.
"""


def listing():
    parts = [LISTING_HEAD]
    for t in registry.TABLES:
        parts.append(f"\n## {t.name}\n\n{t.what}.\n\nFrom: {t.sources}.\n\n"
                     f"<!-- generated: {t.name} -->\n{registry.render(t.name)}{blocks.END}\n")
    return "".join(parts)


def markdown(files):
    """(path, text) of the files named, or of every markdown file but the listing"""
    paths = files or [p for p in blocks.markdown_files(source.ROOT) if p != LISTING]
    for path in paths:
        with open(os.path.join(source.ROOT, path)) as f:
            yield path, f.read()


def tables(files, write):
    """rewrites (write) or checks every block, and the listing unless files are named; the problems
    and how many blocks there are"""
    problems, count = [], 0
    for path, old in markdown(files):
        try:
            new, found = blocks.rewrite(old, path, registry.render)
        except ValueError as e:  # a block not closed, or nested
            problems.append(f"{e}: left as it is")
            continue
        problems += found
        count += len(blocks.parse(old, path))
        if write and new != old:
            with open(os.path.join(source.ROOT, path), "w") as f:
                f.write(new)
    if not files:
        problems += [f"{path}: no {missing} beside it" for path, missing in source.unpaired()]
        path = os.path.join(source.ROOT, LISTING)
        old = open(path).read() if os.path.exists(path) else None
        if old != listing():
            problems.append(f"{LISTING}: stale")
            if write:
                with open(path, "w") as f:
                    f.write(listing())
    return problems, count


def main(argv):
    p = argparse.ArgumentParser(prog="results.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split")
    s.add_argument("results"), s.add_argument("prefix"), s.add_argument("round")
    sub.add_parser("summary").add_argument("folder")
    sub.add_parser("show").add_argument("name", choices=sorted(registry.BY_NAME))
    t = sub.add_parser("tables")
    t.add_argument("--list", action="store_true"), t.add_argument("files", nargs="*")
    sub.add_parser("check").add_argument("files", nargs="*")
    m = sub.add_parser("sim")
    m.add_argument("name"), m.add_argument("--untimed", action="store_true"), m.add_argument("--check", action="store_true")
    a = p.parse_args(argv)
    if a.command == "split":
        return split.main(a.results, a.prefix, a.round)
    if a.command == "summary":
        sys.stdout.write(summary.text(source.open_folder(os.path.abspath(a.folder))))
    elif a.command == "show":
        sys.stdout.write(registry.render(a.name))
    elif a.command == "sim":
        return 0 if text.write_sim(a.name, sys.stdin.read(), timed=not a.untimed, check=a.check) else 1
    elif a.command == "tables" and a.list:
        sys.stdout.write(listing())
    else:
        problems, count = tables(a.files, write=a.command == "tables")
        failed = problems if a.command == "check" else [p for p in problems if not p.endswith("stale")]
        for line in problems:
            print(line if line in failed else line[:-len("stale")] + "rewritten")
        if a.command == "check" and not failed:
            print(f"check: all {count} generated blocks match their files" + ("" if a.files else f", and so does {LISTING}"))
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
