"""A results folder, read in place: a directory (scripts/llama.sh's results), or a GPU session's
tarball, docs/results/<card>-<commit>.tar.xz (h200, h100), never unpacked. A file's name is its path inside the
folder, '/'-separated, without a leading './' (the tarballs differ there).

Beside each tarball, <card>-<commit>.json says what the session holds:

    {"date": "2026-12-02T09:51:12+00:00", "families": ["speed", "greedy"],
     "layout": {"configs": ["ggml", "legacy"], "depths": [0, 4096, 32768]}, "note": "..."}

date: the commit's (git log -1 --format=%cI COMMIT), which orders the sessions; families: the table
families whose files it holds (scripts/results/registry.py's FAMILIES), none for files no table
reads; layout (optional): the order llama.sh ran its rotating rounds in, for rounds split before
each test kept its place; note (optional): what a reader should know, read by no code."""

import datetime
import functools
import glob
import json
import os
import re
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join("docs", "results")


class Folder:
    """the files of one results folder; label: how tables name it (a session's commit)"""

    def __init__(self, label, names, read):
        self.label = label
        self._names = sorted(names)
        self._read = read

    def names(self):
        return list(self._names)

    def has(self, name):
        return name in self._names

    def text(self, name, default=None):
        """the file's text (undecodable bytes replaced), or default where there is no such file"""
        if name not in self._names:
            return default
        return self._read(name).decode(errors="replace")

    def json_lines(self, name):
        """the JSON value of each line of the file ([] where there is no such file)"""
        return [json.loads(line) for line in self.text(name, "").splitlines() if line.strip()]

    def match(self, pattern):
        """[(name, match)] of the files whose whole name the pattern matches, in name order"""
        found = ((name, re.fullmatch(pattern, name)) for name in self._names)
        return [(name, m) for name, m in found if m]


def directory(path, label):
    names = []
    for top, _, files in os.walk(path):
        rel = os.path.relpath(top, path)
        names += [f if rel == "." else f"{rel}/{f}".replace(os.sep, "/") for f in files]

    def read(name):
        with open(os.path.join(path, name), "rb") as f:
            return f.read()
    return Folder(label, names, read)


def tarball(path, label):
    files = {}
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            if member.isfile():
                files[re.sub(r"^(?:\./)+", "", member.name)] = tar.extractfile(member).read()
    return Folder(label, files, files.__getitem__)


@functools.lru_cache(maxsize=None)
def open_folder(path, label=None):
    """a directory or a tarball; label defaults to the name without its extensions"""
    label = label or os.path.basename(path.rstrip("/")).split(".")[0]
    return directory(path, label) if os.path.isdir(path) else tarball(path, label)


SESSION_GLOB = "h[0-9]00-"  # a session's file name starts with its card: h200-, h100-


def session_path(commit):
    """the GPU session's tarball: docs/results/<card>-<commit>.tar.xz"""
    return glob.glob(os.path.join(ROOT, RESULTS, f"{SESSION_GLOB}{commit}.tar.xz"))[0]


def session(commit):
    """the GPU session of that commit, labelled by its commit"""
    return open_folder(session_path(commit), commit)


class Declared:
    """a session's JSON: commit, date, families, layout ({"configs": [...], "depths": [...]} or None)"""

    def __init__(self, path):
        self.path = os.path.relpath(path, ROOT)
        self.commit = os.path.basename(path)[len("h200-"):-len(".json")]  # every card's name is as long
        try:
            with open(path) as f:
                data = json.load(f)
            self.date, self.families, self.layout = data["date"], data["families"], data.get("layout")
        except (ValueError, KeyError) as e:
            raise ValueError(f"{self.path}: not a session's JSON ({e!r})") from None


def declared():
    """every session's JSON under docs/results, in date order"""
    found = [Declared(p) for p in glob.glob(os.path.join(ROOT, RESULTS, SESSION_GLOB + "*.json"))]
    return sorted(found, key=lambda d: (datetime.datetime.fromisoformat(d.date), d.commit))


def unpaired():
    """[(file, the file missing beside it)]: a tarball without its JSON, a JSON without its tarball"""
    names = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, RESULTS, SESSION_GLOB + "*"))}
    pairs = [(".tar.xz", ".json"), (".json", ".tar.xz")]
    return sorted((os.path.join(RESULTS, n), n[:-len(have)] + want) for n in names for have, want in pairs
                  if n.endswith(have) and n[:-len(have)] + want not in names)
