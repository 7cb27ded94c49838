"""A results folder, read in place: a directory (scripts/llama.sh's results), or a session's
tarball, docs/results/h200-<commit>.tar.xz, never unpacked. A file's name is its path inside the
folder, '/'-separated, without a leading './' (the tarballs differ there)."""

import functools
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

    def match(self, pattern):
        """[(name, match)] of the files whose whole name the pattern matches, in name order"""
        found = ((name, re.fullmatch(pattern, name)) for name in self._names)
        return [(name, m) for name, m in found if m]


def normal(name):
    while name.startswith("./"):
        name = name[2:]
    return name


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
                files[normal(member.name)] = tar.extractfile(member).read()
    return Folder(label, files, files.__getitem__)


@functools.lru_cache(maxsize=None)
def open_folder(path, label=None):
    """a directory or a tarball; label defaults to the name without its extensions"""
    label = label or os.path.basename(path.rstrip("/")).split(".")[0]
    return directory(path, label) if os.path.isdir(path) else tarball(path, label)


def session(commit, root=ROOT):
    """the GPU session of that commit: docs/results/h200-<commit>.tar.xz, labelled by its commit"""
    return open_folder(os.path.join(root, RESULTS, f"h200-{commit}.tar.xz"), commit)


def sessions(*commits):
    return [session(c) for c in commits]
