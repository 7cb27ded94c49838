#!/usr/bin/env python3
"""Random memory spikes on a GPU for --seconds s: over and over a gap, then a co-tenant (--hold,
a shell command that gets the MiB to leave free as its last argument and prints one line with
"holding" once it holds the rest) kept for a while, then SIGTERMed with its process group.
Lengths come from --seed. One JSON line per spike goes to --out as it ends:

    {"free_mib": 128, "length_s": 4.2, "held_from": EPOCH, "held_to": EPOCH}

length_s is the planned hold, held_from..held_to the time it held (from its "holding" line to the
kill; cut at --seconds). SIGTERM ends a spike in progress and stops. Standard library only.

    spikes.py --seconds 300 --seed 1 --out spikes.jsonl --hold 'hold-memory' [--free 0,256]
              [--length 0.2,15] [--gap 2,20]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

FREE_MIB = (0, 256)  # MiB the co-tenant leaves free: from none to a few of the pools' blocks
LENGTH_S = (0.2, 15.0)  # s a spike holds: from one batch to well past the pools' 5 s wait
GAP_S = (2.0, 20.0)  # s between spikes: the pools see memory come back and go again


def span(text):
    """'lo,hi' as a (lo, hi) of floats"""
    lo, hi = (float(v) for v in text.split(","))
    return lo, hi


def hold(command, free):
    """the co-tenant, once it holds its memory"""
    proc = subprocess.Popen(f"{command} {free}", shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    line = proc.stdout.readline()  # its one line once it holds the memory
    if "holding" not in line:
        release(proc)
        raise SystemExit(f"spikes: the co-tenant did not start: {line.strip()}")
    return proc


def release(proc):
    os.killpg(proc.pid, signal.SIGTERM)  # the shell and the co-tenant it started
    proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="one JSON line per spike")
    ap.add_argument("--hold", required=True, help="the co-tenant's command, the MiB to leave free appended")
    ap.add_argument("--free", type=span, default=FREE_MIB, help="MiB left free, lo,hi")
    ap.add_argument("--length", type=span, default=LENGTH_S, help="s a spike holds, lo,hi")
    ap.add_argument("--gap", type=span, default=GAP_S, help="s between spikes, lo,hi")
    args = ap.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rng = random.Random(args.seed)
    deadline = time.time() + args.seconds
    with open(args.out, "w") as out:
        while not stop.wait(min(rng.uniform(*args.gap), max(0.0, deadline - time.time()))):
            if time.time() >= deadline:
                break
            free, length = rng.randint(*(int(v) for v in args.free)), rng.uniform(*args.length)
            proc = hold(args.hold, free)
            held_from = time.time()
            stop.wait(min(length, max(0.0, deadline - held_from)))
            release(proc)
            out.write(json.dumps({"free_mib": free, "length_s": round(length, 2), "held_from": held_from,
                                  "held_to": time.time()}) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
