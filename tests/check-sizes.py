#!/usr/bin/env python3
"""No source file over 400 lines, no function over 80, in the tracked files under ggml-cuda/,
tools/, integrations/ and scripts/. Prints each offender and fails when there is one.

A function's lines run from the line of its opening brace to the line of its closing brace
(C, C++, CUDA, shell), or from its `def` to the end of its body (Python). In C-like files the
comments, string and character literals and preprocessor lines are blanked first; namespaces,
classes, structs, unions, enums and extern "C" blocks hold functions, and a lambda counts as
part of the function it is written in. Every tracked file must have a kind below: a file of an
unknown kind is an offender too, so that nothing goes unchecked without saying so.

    check-sizes.py [SOURCE_DIR]
"""

import ast
import os
import re
import subprocess
import sys

FOLDERS = ("ggml-cuda", "tools", "integrations", "scripts")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80

C_LIKE = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"}
SHELL = {".sh"}
PYTHON = {".py"}
BUILD = {".cmake", "CMakeLists.txt", ".md", ".toml"}  # source: their length is checked, they have no functions
# not source, so not checked, each with the reason
NOT_SOURCE = {
    ".patch": "a diff applied to llama.cpp's sources: its length is that of the change it carries",
}


def kind_of(path):
    name = os.path.basename(path)
    ext = name if name in BUILD else os.path.splitext(name)[1]
    for kind, exts in (("c", C_LIKE), ("sh", SHELL), ("py", PYTHON), ("build", BUILD)):
        if ext in exts:
            return kind
    return "not source" if ext in NOT_SOURCE else None


# --- C, C++, CUDA -------------------------------------------------------------------------

LITERAL_OR_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
CONTAINER = re.compile(r'\b(?:namespace|class|struct|union|enum)\b[^()]*$|\bextern\s*""\s*$')
# what may follow a function's parameter list: qualifiers and a trailing return type
AFTER_PARAMETERS = re.compile(
    r"^(?:\s*(?:const|volatile|noexcept|override|final|mutable|try|&&?))*\s*(?:->[\w:<>,\s*&]+)?$")
CONSTRUCTOR_INITIALIZERS = re.compile(r"\)\s*:[^:].*[)}]$", re.S)


def blank(match):
    """a literal or comment kept as its quotes (or nothing) and its line breaks"""
    text = match.group(0)
    keep = text[0] + text[-1] if text[0] in "\"'" else ""
    return keep + "\n" * text.count("\n")


def strip_c(text):
    text = LITERAL_OR_COMMENT.sub(blank, text)
    return PREPROCESSOR.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def is_function(head):
    head = head.strip()
    if ")" not in head or head.endswith("="):
        return False
    after = head[head.rindex(")") + 1:]
    return bool(AFTER_PARAMETERS.match(after) or CONSTRUCTOR_INITIALIZERS.search(head))


def function_name(head):
    head = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", head)
    names = re.findall(r"(operator\s*\S+?|[\w:~]+)\s*\(", head)
    return names[0] if names else "?"


def c_functions(text):
    """(name, first line, last line) of each function outside another function"""
    text = strip_c(text)
    stack = []  # per open brace: "container", "other" or (name, line) of a function
    head, line, found = "", 1, []
    for ch in text:
        if ch == "\n":
            line += 1
        in_container = all(b == "container" for b in stack)
        if ch == "{":
            brace = "other"  # a block in a function, or an initializer (its declaration goes on)
            if in_container and CONTAINER.search(head.strip()):
                brace = "container"
            elif in_container and is_function(head):
                brace = (function_name(head), line)
            stack.append(brace)
            head = head if brace == "other" else ""
        elif ch == "}":
            if not stack:
                raise ValueError(f"line {line}: unmatched }}")
            top = stack.pop()
            if isinstance(top, tuple):
                found.append((top[0], top[1], line))
            if all(b == "container" for b in stack):
                head = head + "{}" if top == "other" else ""
        elif in_container:
            head = "" if ch == ";" else head + ch
    if stack:
        raise ValueError("unmatched {")
    return found


# --- shell ----------------------------------------------------------------------------------

SH_FUNCTION = re.compile(r"^(\s*)(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{\s*(#.*)?$")


def sh_functions(text):
    """functions written `name() {` ... `}`, the closing brace at the opening line's indentation;
    one written on one line is one line long"""
    lines = text.split("\n")
    found = []
    for i, l in enumerate(lines):
        m = SH_FUNCTION.match(l)
        if not m:
            continue
        close = m.group(1) + "}"
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == close), None)
        if end is None:
            raise ValueError(f"line {i + 1}: {m.group(2)}() has no closing brace at its indentation")
        found.append((m.group(2), i + 1, end + 1))
    return found


# --- Python ---------------------------------------------------------------------------------

def py_functions(text):
    return [(node.name, node.lineno, node.end_lineno) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


FUNCTIONS = {"c": c_functions, "sh": sh_functions, "py": py_functions, "build": lambda text: []}


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--", *FOLDERS],
                             capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):  # no git: a source tree without its history
        return sorted(os.path.relpath(os.path.join(d, f), root) for folder in FOLDERS
                      for d, _, files in os.walk(os.path.join(root, folder)) for f in files)


def offences(root, path):
    kind = kind_of(path)
    if kind is None:
        return [f"{path}: a file of unknown kind: name it in check-sizes.py as source or not"]
    if kind == "not source":
        return []
    with open(os.path.join(root, path), encoding="utf-8") as f:
        text = f.read()
    found = []
    lines = len(text.splitlines())
    if lines > MAX_FILE_LINES:
        found.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES})")
    try:
        functions = FUNCTIONS[kind](text)
    except (ValueError, SyntaxError) as e:
        return found + [f"{path}: cannot find its functions: {e}"]
    for name, first, last in functions:
        if last - first + 1 > MAX_FUNCTION_LINES:
            found.append(f"{path}:{first}: {name} is {last - first + 1} lines"
                         f" (at most {MAX_FUNCTION_LINES})")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = tracked_files(root)
    found = [o for path in files for o in offences(root, path)]
    for path in files:
        if kind_of(path) == "not source":
            print(f"not checked: {path}: {NOT_SOURCE[os.path.splitext(path)[1]]}")
    for o in found:
        print(o)
    print(f"{len(files)} files, {len(found)} over the limits")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
