"""What the checks of the project's Python scripts share: a script loaded as a module from its
path (its file name need not be a module name), its printed output captured, and one line per
check, with the output shown when one fails."""

import contextlib
import importlib.util
import io
import sys


def load_script(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def captured(fn, *args):
    """fn(*args)'s result and what it printed"""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


def check(cond, what, output):
    if not cond:
        print(output)
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")
