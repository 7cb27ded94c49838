"""Markdown the tables are written in: a pipe table, an indented code block, and the number
formats the docs use."""


def table(columns, rows):
    """a pipe table: a header, its rule, a line a row (every cell a string)"""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def code(text):
    """an indented code block of the text, trailing blanks dropped"""
    return "".join(f"    {line}".rstrip() + "\n" for line in text.rstrip("\n").splitlines())


def interval(ratio, low, high):
    return f"{ratio:.3f} [{low:.3f}, {high:.3f}]"


def significant(x):
    """three significant digits, as the docs print times: 136, 96.3, 17.0, 1.55"""
    for digits, limit in ((0, 100), (1, 10), (2, 1)):
        if abs(x) >= limit:
            return f"{x:.{digits}f}"
    return f"{x:.3f}"


def varying(keys, names):
    """the indices of names whose value differs between the keys (tuples of as many values)"""
    return [i for i in range(len(names)) if len({k[i] for k in keys}) > 1]
