"""Tables that are a tool's text output, shown as it printed it: a session's gpu-test summary."""

from . import markdown


def gpu_summary(folder):
    return markdown.code(folder.text("gpu/summary.txt"))
