#!/usr/bin/env python3
"""Pools the interleaved rounds of several results folders (sessions of scripts/llama.sh) into
one, for scripts/llama-summary.py: the llama-bench and speculative round files (bench-...-rN and
spec-...-rN) are copied with their rounds renumbered, each folder's after the previous folders'
last. A round stays one round (the same number for every configuration that ran it), and rounds
of different sessions never pair. Pool only configurations whose code is the same in every
folder named; --drop CONFIG@FOLDER (FOLDER as given) leaves one configuration of one folder out.

    llama-results-merge.py OUT FOLDER [FOLDER ...] [--drop CONFIG@FOLDER ...]

Refuses (exit 1, writing nothing) when OUT holds round files already, when a folder holds none,
or when a --drop names no configuration of its folder.
"""
import os
import re
import shutil
import sys

USAGE = "usage: llama-results-merge.py OUT FOLDER [FOLDER ...] [--drop CONFIG@FOLDER ...]"
ROUND_FILE = re.compile(r"^(?P<stem>(bench|spec)-.+)-r(?P<round>\d+)\.(?P<ext>jsonl|stats|log|txt)$")


def round_files(folder):
    """[(stem, round, ext)] of a folder's round files"""
    found = []
    for name in sorted(os.listdir(folder)):
        m = ROUND_FILE.match(name)
        if m:
            found.append((m["stem"], int(m["round"]), m["ext"]))
    return found


def plan(out, folders, drops):
    """[(source path, destination path)], or an error message"""
    if os.path.isdir(out) and round_files(out):
        return None, f"{out} holds round files already"
    copies, offset = [], 0
    for folder in folders:
        files = round_files(folder)
        if not files:
            return None, f"{folder}: no round files"
        dropped = {c for c, f in drops if f == folder}
        for config in dropped:
            if not any(stem.endswith("-" + config) for stem, _, _ in files):
                return None, f"--drop {config}@{folder}: no such configuration there"
        last = offset
        for stem, rnd, ext in files:
            if any(stem.endswith("-" + c) for c in dropped):
                continue
            copies.append((os.path.join(folder, f"{stem}-r{rnd}.{ext}"), os.path.join(out, f"{stem}-r{rnd + offset}.{ext}")))
            last = max(last, rnd + offset)
        offset = last
    return copies, None


def main(argv):
    args, drops = [], []
    it = iter(argv)
    for a in it:
        if a == "--drop":
            config, _, folder = next(it, "").partition("@")
            drops.append((config, folder))
        else:
            args.append(a)
    if len(args) < 2 or any(not c or not f for c, f in drops):
        print(USAGE, file=sys.stderr)
        return 2
    out, folders = args[0], args[1:]
    copies, error = plan(out, folders, drops)
    if error:
        print(f"llama-results-merge: {error}", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    for src, dst in copies:
        shutil.copyfile(src, dst)
    print(f"llama-results-merge: {len(copies)} files from {len(folders)} folders into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
