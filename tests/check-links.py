#!/usr/bin/env python3
"""Every relative link of README.md and docs/*.md resolves: the file or folder it names exists in
the tree, and its #anchor is a heading (or an HTML id/name) of the file it points to, as GitHub
renders them. Links to other sites (https:, mailto:, ...) are not followed. Before the tree, the
checker runs on a made-up tree with one broken file link and one broken anchor, and must find
exactly those two (a checker that finds nothing proves nothing).

    tests/check-links.py [ROOT]     (default: the tree this file is in)
"""
import os
import re
import sys
import tempfile
import unicodedata

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
LIST = re.compile(r"^ {0,3}([-*+]|\d+[.)])[ \t]")
INLINE = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*\"([^\"]+)\"", re.I)
HTML_ID = re.compile(r"<[a-z][^>]*?\b(?:id|name)\s*=\s*\"([^\"]+)\"", re.I)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(text):
    """GitHub's anchor for a heading's text: lower case, every character but letters, digits,
    marks, '_', '-' and spaces dropped, each space a '-' (github-slugger)"""
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LMN" or cat == "Pc":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def heading_text(raw):
    """what GitHub renders of a heading's markdown: link text for links, code without its
    backticks, no emphasis markers, no HTML tags"""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", raw)
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)
    return text.strip()


def scan(path):
    """(anchors, links) of a markdown file: the anchors its headings and HTML ids make, and
    (line, target) of every link outside code"""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    anchors, seen, links = set(), {}, []
    fence, prev, prev_code = None, "", False

    def add_heading(raw):
        base = slug(heading_text(raw))
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchors.add(base if n == 0 else f"{base}-{n}")

    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev, prev_code = "", False
            continue
        if m:
            fence, prev, prev_code = m.group(1), "", False
            continue
        # an indented code block starts after a blank line (or goes on from one)
        code = line.startswith(("    ", "\t")) and (prev.strip() == "" or prev_code) and line.strip() != ""
        if code:
            prev, prev_code = line, True
            continue
        h = ATX.match(line)
        if h:
            add_heading(h.group(2))
        elif SETEXT.match(line) and prev.strip() and not ATX.match(prev) and not LIST.match(prev):
            add_heading(prev.strip())  # the paragraph line above is the heading
        for anchor in HTML_ID.findall(line):
            anchors.add(anchor)
        text = CODE_SPAN.sub("", line)
        for target in INLINE.findall(text):
            links.append((number, target[1]))
        for target in REFERENCE.findall(text):
            links.append((number, target))
        for target in HTML_LINK.findall(text):
            links.append((number, target))
        prev, prev_code = line, False
    return anchors, links


def check(root, files):
    """the broken links of files (paths relative to root), one line each"""
    problems, cache = [], {}

    def anchors_of(path):
        if path not in cache:
            cache[path] = scan(path)[0]
        return cache[path]

    for rel in files:
        path = os.path.join(root, rel)
        for number, target in scan(path)[1]:
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            where, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            if not os.path.abspath(dest).startswith(os.path.abspath(root) + os.sep):
                problems.append(f"{rel}:{number}: {target}: outside the tree")
                continue
            if not os.path.exists(dest):
                problems.append(f"{rel}:{number}: {target}: no such file")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                problems.append(f"{rel}:{number}: {target}: no heading or id '{anchor}' in "
                                f"{os.path.relpath(dest, root)}")
    return problems


def documents(root):
    files = ["README.md"] if os.path.exists(os.path.join(root, "README.md")) else []
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join("docs", f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def negative_control():
    """a made-up tree: good links of every form pass, the two broken ones are found"""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "figures"))
        open(os.path.join(root, "docs", "figures", "a.png"), "w").close()
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# Title\n\nSee [design](docs/design.md#the-pools-rules), [twice](docs/design.md#twice-1),\n"
                    "[code](docs/design.md#c-api-ggml_cpool_alloc), [here](#title), ![fig](docs/figures/a.png),\n"
                    "[site](https://example.com/x#y), `[not a link](nowhere.md)`, [gone](docs/gone.md),\n"
                    "[bad anchor](docs/design.md#no-such-heading), [html](docs/design.md#kept).\n\n"
                    "    [in code](nowhere.md)\n\n```\n[fenced](nowhere.md)\n```\n")
        with open(os.path.join(root, "docs", "design.md"), "w") as f:
            f.write("# Design\n\n## The pools' rules\n\n## Twice\n\n## Twice\n\n"
                    "## C API: `ggml_cpool_alloc`\n\n<a name=\"kept\"></a>\n\n```\n# not a heading\n```\n")
        found = check(root, documents(root))
    expected = ["docs/gone.md: no such file", "docs/design.md#no-such-heading: no heading"]
    if len(found) != len(expected) or not all(any(e in p for p in found) for e in expected):
        sys.exit("FAILED: the negative control found\n  " + "\n  ".join(found or ["nothing"]) +
                 "\nwhere it should find exactly: " + "; ".join(expected))
    print("ok: the negative control's two broken links are found, and nothing else")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    negative_control()
    files = documents(root)
    problems = check(root, files)
    for p in problems:
        print(p)
    if problems:
        sys.exit(f"FAILED: {len(problems)} broken links in {len(files)} files")
    print(f"ok: every relative link and anchor of {len(files)} files resolves")


if __name__ == "__main__":
    main()
