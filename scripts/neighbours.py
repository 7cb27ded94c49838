#!/usr/bin/env python3
"""Two PyTorch processes on one GPU (docs/neighbours.md): A bursts to BURST GiB (the card's memory
less 20 GiB: 59 on an 80 GB H100), frees it and idles; B then asks for 40 x 1 GiB, retrying a refused
one every 0.25 s for 15 s, frees them and idles; A bursts again. Fresh processes per configuration
(the allocator is chosen before CUDA starts): A under PyTorch's allocator (native) or a kind of the
module, B under legacy. A row per configuration: what B got and in how long, A's second burst, A's
CPU time while idle, and the module's neighbour counters (GGML_CUDA_POOL_STATS, written at exit).

    PYTHONPATH=<the package folder> scripts/neighbours.py [--configs native,legacy,plain,vmm,async]
    PYTHONPATH=<the package folder> scripts/neighbours.py --burst LEAVE_MIB [--kind KIND]  # a co-tenant job
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

GiB = 1 << 30
ASK = 40          # B's 1 GiB tensors
SPARE_GIB = 20    # A bursts to the card's memory less this
RETRY_S = 0.25    # a refused tensor is tried again this often
GIVE_UP_S = 15.0  # for this long
IDLE_S = 3.0      # A's CPU time is read over this much of its idleness


def burst(kind, leave_mib):
    """A co-tenant job (llama.sh serve's SERVE_HOLD): bursts to all but leave_mib MiB of the GPU in
    1 GiB, 64 MiB then 2 MiB tensors (0: until refused, its neighbours' idle caches taken too), frees them
    into its allocator's cache and idles until killed."""
    from ggml_cuda_pool_torch import use_ggml_cuda_pool
    use_ggml_cuda_pool(kind)
    import torch
    held = []
    for size in (GiB, 64 << 20, 2 << 20):
        while leave_mib == 0 or torch.cuda.mem_get_info()[0] - size >= leave_mib << 20:
            try:
                held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            except torch.OutOfMemoryError:
                break
    total = sum(t.numel() for t in held)
    held.clear()
    torch.cuda.synchronize()
    print(f"holding {total / GiB:.2f} GiB idle in its cache, {torch.cuda.mem_get_info()[0] >> 20} MiB free", flush=True)
    while True:
        time.sleep(3600)


def role(kind, count):
    """A process: at each "go" line, `count` 1 GiB tensors (retrying refusals), one result line, all freed."""
    if kind != "native":
        from ggml_cuda_pool_torch import use_ggml_cuda_pool
        use_ggml_cuda_pool(kind)
    import torch
    print(f"ready total_gib={torch.cuda.get_device_properties(0).total_memory / GiB:.2f}", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        held, refusals = [], 0
        start = time.monotonic()
        while len(held) < count and time.monotonic() < start + GIVE_UP_S:
            try:
                held.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
            except torch.OutOfMemoryError:
                refusals += 1
                time.sleep(RETRY_S)
        took = time.monotonic() - start
        print(f"got={len(held)} of={count} refusals={refusals} seconds={took:.3f}", flush=True)
        held.clear()  # back to its allocator's cache: idle
        torch.cuda.synchronize()
    return 0


class process:
    def __init__(self, kind, count, stats):
        env = dict(os.environ, GGML_CUDA_POOL_STATS=stats)
        self.p = subprocess.Popen([sys.executable, __file__, "--role", kind, str(count)], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ready = self.p.stdout.readline().strip()

    def burst(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        return dict(kv.split("=") for kv in self.p.stdout.readline().split())

    def cpu_s(self):  # user + system time so far (/proc/PID/stat fields 14 and 15)
        fields = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def counters(path):
    """The neighbour fields of a stats file's pool lines, summed."""
    sums = {}
    for line in open(path) if os.path.exists(path) else []:
        for key, value in re.findall(r"(neighbour_\w+)=([\d.]+)", line):
            sums[key] = sums.get(key, 0) + float(value)
    return sums


def run(config, tmp):
    a_stats, b_stats = f"{tmp}/{config}-a.stats", f"{tmp}/{config}-b.stats"
    probe = process(config, 0, a_stats)  # the card's size, from a process that allocates nothing
    total = float(probe.ready.split("=")[1])
    probe.end()
    burst = int(total) - SPARE_GIB
    a = process(config, burst, a_stats)
    first = a.burst()
    cpu = a.cpu_s()
    time.sleep(IDLE_S)
    idle_cpu_ms = (a.cpu_s() - cpu) * 1000
    b = process("legacy", ASK, b_stats)
    served = b.burst()
    again = a.burst()
    a.end()
    b.end()
    na, nb = counters(a_stats), counters(b_stats)
    print(f"| {config} | {first['got']}/{burst} | {served['got']}/{ASK} | {served['refusals']} | {served['seconds']} | "
          f"{again['got']}/{burst} | {again['seconds']} | {idle_cpu_ms:.0f} | {na.get('neighbour_gives', 0):.0f} | "
          f"{na.get('neighbour_given_mib', 0) / 1024:.1f} | {nb.get('neighbour_asks', 0):.0f} | "
          f"{nb.get('neighbour_ask_ms', 0):.0f} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="native,legacy,plain,vmm,async")
    p.add_argument("--role", nargs=2, metavar=("KIND", "COUNT"), help=argparse.SUPPRESS)
    p.add_argument("--burst", type=int, metavar="LEAVE_MIB", help="the co-tenant job (llama.sh serve's SERVE_HOLD)")
    p.add_argument("--kind", default="legacy", help="--burst's kind")
    args = p.parse_args()
    if args.burst is not None:
        return burst(args.kind, args.burst)
    if args.role:
        return role(args.role[0], int(args.role[1]))
    print("| A | A's burst | B got | B's refusals | B's s | A's next burst | its s | A idle CPU ms | A's gives | "
          "GiB given | B's asks | B's ask ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for config in args.configs.split(","):
            run(config, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
