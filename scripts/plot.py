#!/usr/bin/python3
"""Draws reserved against live memory over time, per configuration, from pool-replay's
--perfetto output (Chrome trace event JSON): one PNG per configuration and one with them all.

    scripts/plot.py REPLAY.json OUT_DIR [--configs NAME,...] [--title TEXT]

Uses Debian's python3-matplotlib (installed with apt-get when missing, as scripts/lib.sh does).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRACK = "all pools"  # the counter track summed over every pool of a configuration
EVENT_STYLE = {  # instant events: colour and label
    "LRU reclaim": ("tab:red", "LRU reclaim"),
    "flush": ("tab:orange", "flush"),
    "OUT_OF_MEMORY": ("black", "OUT_OF_MEMORY"),
    "fault": ("tab:purple", "injected fault"),
}
COLUMNS = 2  # of the overview
DPI = 110
BINS = 400  # live memory swings every layer: each bin shows its peak, the envelope that reserved must cover


def matplotlib_pyplot():
    try:
        import matplotlib
    except ImportError:
        subprocess.run(["bash", "-c", f". '{HERE}/lib.sh' && need_packages python3-matplotlib"], check=True)
        import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    return plt


def read_replay(path):
    """{config: {"t": [...ms], "live": [...MiB], "reserved": [...MiB], "events": [(ms, name)]}}, in file order"""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names, series = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
            series[e["args"]["name"]] = {"t": [], "live": [], "reserved": [], "events": []}
    for e in events:
        s = series.get(names.get(e.get("pid")))
        if s is None:
            continue
        if e.get("ph") == "C" and e.get("name") == TRACK:
            s["t"].append(e["ts"] / 1000.0)
            s["live"].append(e["args"]["live MiB"])
            s["reserved"].append(e["args"]["reserved MiB"])
        elif e.get("ph") == "i":
            s["events"].append((e["ts"] / 1000.0, e["name"]))
    return series


def envelope(t, values, bins):
    """(bin starts, the peak of each bin), a bin without a point holding the value before it"""
    if not t:
        return [], []
    start, width = t[0], max((t[-1] - t[0]) / bins, 1e-9)
    peaks, lasts = [None] * bins, [None] * bins
    for x, v in zip(t, values):
        i = min(int((x - start) / width), bins - 1)
        peaks[i] = v if peaks[i] is None else max(peaks[i], v)
        lasts[i] = v
    carry = values[0]
    for i in range(bins):
        if peaks[i] is None:
            peaks[i] = carry
        else:
            carry = lasts[i]
    return [start + i * width for i in range(bins)], peaks


def draw(ax, name, s):
    t, reserved = envelope(s["t"], s["reserved"], BINS)
    _, live = envelope(s["t"], s["live"], BINS)
    ax.fill_between(t, reserved, step="post", color="tab:blue", alpha=0.25, label="reserved")
    ax.step(t, reserved, where="post", color="tab:blue", linewidth=1)
    ax.step(t, live, where="post", color="tab:green", linewidth=1.2, label="live (peak per interval)")
    peak_live, peak_resv = max(s["live"], default=0), max(s["reserved"], default=0)
    by_name = {}
    for at, ev in s["events"]:
        by_name.setdefault(ev, []).append(at)
    for ev, times in by_name.items():  # a tick along the top per event
        colour, label = EVENT_STYLE.get(ev, ("gray", ev))
        ax.plot(times, [peak_resv * 1.04] * len(times), "|", color=colour, markersize=8,
                label=f"{label} ({len(times)})")
    ratio = f", {peak_resv / peak_live:.2f}x" if peak_live > 0 else ""
    ax.set_title(f"{name}: peak reserved {peak_resv:.0f} MiB for {peak_live:.0f} MiB live{ratio}", fontsize=9)
    ax.set_xlabel("trace time (ms)", fontsize=8)
    ax.set_ylabel("MiB", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_ylim(0, max(peak_resv, 1) * 1.1)
    ax.legend(fontsize=7, loc="upper left")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("replay", help="pool-replay --perfetto output")
    p.add_argument("out_dir")
    p.add_argument("--configs", help="comma-separated configurations (default: every one in the file)")
    p.add_argument("--title", default="", help="a line above the overview")
    a = p.parse_args()

    series = read_replay(a.replay)
    names = a.configs.split(",") if a.configs else list(series)
    missing = [n for n in names if n not in series or not series[n]["t"]]
    if missing:
        sys.exit(f"plot.py: no '{TRACK}' counters for {', '.join(missing)} in {a.replay} "
                 f"(pool-replay --perfetto writes them; it has {', '.join(series) or 'none'})")
    plt = matplotlib_pyplot()
    os.makedirs(a.out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(a.replay))[0]

    for n in names:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        draw(ax, n, series[n])
        fig.tight_layout()
        out = os.path.join(a.out_dir, f"{stem}-{n}.png")
        fig.savefig(out, dpi=DPI)
        plt.close(fig)
        print(out)

    rows = (len(names) + COLUMNS - 1) // COLUMNS
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(7 * COLUMNS, 3.2 * rows), squeeze=False, sharex=True)
    for i, n in enumerate(names):
        draw(axes[i // COLUMNS][i % COLUMNS], n, series[n])
    for j in range(len(names), rows * COLUMNS):
        axes[j // COLUMNS][j % COLUMNS].set_visible(False)
    if a.title:
        fig.suptitle(a.title, fontsize=11)
    fig.tight_layout()
    out = os.path.join(a.out_dir, f"{stem}-overview.png")
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    print(out)


if __name__ == "__main__":
    main()
