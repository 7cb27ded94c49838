#!/usr/bin/env python3
"""What a refused allocation does under PyTorch's own CUDA allocator and under each ggml-cuda-pool
kind (integrations/pytorch), each configuration in a fresh process, on a CUDA device:

  (a) over    a tensor half again as large as the device is refused with an exception the caller
              catches (torch.OutOfMemoryError under PyTorch's allocator; the table says what each
              kind raises), and then a small tensor and a kernel work, no CUDA error is pending (the
              runtime PyTorch uses, cudaPeekAtLastError) and the bytes live are what they were;
  (b) 40 GiB  a 40 GiB tensor is served and written, where the device has 48 GiB or more;
  (c) loop    chunks of 1 GiB until the device refuses one, the refusal caught, half of them freed,
              then 16 steps that each allocate half a chunk and compute (as a training loop halves
              its batch after an out-of-memory), every result checked, and once everything is
              freed the bytes live are what they were before the loop.

Each row also gives the first allocation's time and the device memory it took (the pool context
and, for vmm, its reservation), and the time of an allocation that grows the pool by 64 MiB (a
cudaMalloc, a VMM mapping, the stream-ordered pool's growth). A probe of the driver itself times
reserving a VMM address range of 32 GiB (the module's default) and of the device's memory (what
the PyTorch library reserves), and a 64 MiB mapping inside each.

    tests/torch-oom.py [--require-torch-errors]   # with the package installed (integrations/pytorch)
    bash scripts/torch-oom.sh                      # without: builds the library out of the tree, runs this
    tests/torch-oom.py --config vmm                # one configuration in this process: a RESULT line

Exit status: 0 when every check passed, 1 otherwise, 77 (after a line with the reason) where torch
cannot be imported or sees no CUDA device.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import torch_oom_probe

CONFIGS = ("native", "legacy", "plain", "vmm", "async")
MiB = 1 << 20
GiB = 1 << 30
LARGE = 40 * GiB        # check (b)'s tensor
LARGE_DEVICE = 48 * GiB  # the least device memory (b) runs on
CHUNK = GiB             # check (c)'s chunk
STEPS = 16              # check (c)'s steps after the refusal
MATMUL_SIDE = 2048      # each step's product, fp16 (8 MiB an operand)
GROW = 64 * MiB         # an allocation that grows a pool
GROW_COUNT = 16
RESULT_PREFIX = "RESULT "
SKIP = 77
CHILD_TIMEOUT = 600     # seconds for one configuration's process


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--library", help="libggml-cuda-pool-torch.so (default: the package's own)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ", ".join(CONFIGS))
    p.add_argument("--config", choices=CONFIGS, help="one configuration in this process")
    p.add_argument("--probe", action="store_true", help="the driver probe in this process")
    p.add_argument("--require-torch-errors", action="store_true",
                   help="a kind passes (a) only with torch.OutOfMemoryError (the library built against torch's headers)")
    return p.parse_args()


# ---- one configuration ---------------------------------------------------------------------

def type_name(e):
    t = type(e)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def pending_cuda_error():
    """cudaPeekAtLastError of the CUDA runtime PyTorch loaded (not cleared): "none", the error's
    name, or "n/a" where no runtime library is loaded (a static runtime)."""
    import ctypes
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "libcudart.so" in line.split()[-1]})
    if not paths:
        return "n/a"
    rt = ctypes.CDLL(paths[0])  # the loaded one: dlopen of its path hands back the same object
    rt.cudaGetErrorName.restype = ctypes.c_char_p
    rc = rt.cudaPeekAtLastError()
    return "none" if rc == 0 else rt.cudaGetErrorName(rc).decode()


def live_bytes(torch, config):
    """The bytes tensors hold, as the allocator counts them (pools: rounded as their lines print)."""
    if config == "native":
        return torch.cuda.memory_allocated()
    from ggml_cuda_pool_torch import pool_stats
    return round(sum(s["live_mib"] for s in pool_stats() if s.get("device") == 0), 2)


def startup(torch):
    """The first allocation (the pool context; for vmm its reservation and first mapping) and
    allocations that each grow the pool by GROW."""
    free_before = torch.cuda.mem_get_info()[0]
    t0 = time.perf_counter()
    first = torch.empty(MiB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    taken = free_before - torch.cuda.mem_get_info()[0]
    held = []
    t0 = time.perf_counter()
    for _ in range(GROW_COUNT):
        held.append(torch.empty(GROW, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    grow_ms = (time.perf_counter() - t0) * 1e3 / GROW_COUNT
    del held, first
    return {"first_ms": first_ms, "first_mib": taken / MiB, "grow_ms": grow_ms}


def over_device(torch, config, oom_error):
    """Check (a)."""
    total = torch.cuda.mem_get_info()[1]
    before = live_bytes(torch, config)
    r = {"raised": None, "message": "", "why": []}
    try:
        t = torch.empty(total + total // 2, dtype=torch.uint8, device="cuda")
        t.fill_(1)
        torch.cuda.synchronize()
        del t
        r["why"].append("served")
    except Exception as e:  # noqa: BLE001: what it raises is what is measured
        r["raised"], r["message"] = type_name(e), str(e)
        if not isinstance(e, oom_error):
            r["why"].append(f"not {oom_error.__name__}")
    try:
        if torch.ones(1024, device="cuda").sum().item() != 1024:
            r["why"].append("a kernel after it computed wrong")
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        r["why"].append(f"after it: {type_name(e)}: {str(e)[:80]}")
    r["pending"] = pending_cuda_error()
    if r["pending"] not in ("none", "n/a"):
        r["why"].append(f"pending {r['pending']}")
    if live_bytes(torch, config) != before:
        r["why"].append("live bytes moved")
    return r


def large_tensor(torch):
    """Check (b)."""
    total = torch.cuda.mem_get_info()[1]
    if total < LARGE_DEVICE:
        return {"large": f"skip ({total / GiB:.0f} GiB device)"}
    try:
        t0 = time.perf_counter()
        t = torch.empty(LARGE, dtype=torch.uint8, device="cuda")
        t.fill_(7)
        ok = t[-1].item() == 7 and t[LARGE // 2].item() == 7
        del t
        torch.cuda.synchronize()
        return {"large": "pass" if ok else "FAIL (wrong contents)", "large_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001
        return {"large": f"FAIL ({type_name(e)}: {str(e)[:60]})"}


def step(torch, i, kept):
    """One step after the refusal: half a chunk kept, a product computed; whether both are right."""
    value = i % 251 + 1
    a = torch.empty(CHUNK // 2, dtype=torch.uint8, device="cuda")
    a.fill_(value)
    kept.append(a)
    x = torch.full((MATMUL_SIDE, MATMUL_SIDE), 1.0, dtype=torch.float16, device="cuda")
    y = x @ x  # every element MATMUL_SIDE, exact in fp16
    return a[-1].item() == value and y[0, 0].item() == MATMUL_SIDE and y[-1, -1].item() == MATMUL_SIDE


def training_loop(torch, config, oom_error):
    """Check (c)."""
    before = live_bytes(torch, config)
    total = torch.cuda.mem_get_info()[1]
    held, r, c = [], {"chunks": 0, "steps": 0, "why": []}, None
    try:
        for _ in range(2 * total // CHUNK):  # bounded: a device that never refuses fails the check
            c = torch.empty(CHUNK, dtype=torch.uint8, device="cuda")
            c.fill_(1)
            held.append(c)
        r["why"].append("never refused")
    except oom_error:
        pass
    except Exception as e:  # noqa: BLE001
        r["why"].append(f"filling: {type_name(e)}: {str(e)[:60]}")
    c = None  # the last chunk the loop made is in held; its name must not keep it alive past the loop
    r["chunks"] = len(held)
    del held[len(held) // 2:]
    kept = []
    try:
        for i in range(STEPS):
            if not step(torch, i, kept):
                r["why"].append(f"step {i} computed wrong")
            r["steps"] += 1
    except Exception as e:  # noqa: BLE001
        r["why"].append(f"step {r['steps']}: {type_name(e)}: {str(e)[:60]}")
    try:
        if held and held[0][-1].item() != 1:
            r["why"].append("a kept chunk changed")
        del held, kept
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        r["why"].append(f"after the steps: {type_name(e)}: {str(e)[:60]}")
    if live_bytes(torch, config) != before:
        r["why"].append(f"live {live_bytes(torch, config)} against {before} before")
    return r


def run_one(args):
    native = args.config == "native"
    if not native:
        from ggml_cuda_pool_torch import out_of_memory_error, use_ggml_cuda_pool
        use_ggml_cuda_pool(args.config, args.library)  # before anything touches CUDA
    import torch
    torch.cuda.init()
    torch.cuda.synchronize()  # the context, with nothing allocated
    oom_error = torch.cuda.OutOfMemoryError if native else out_of_memory_error()
    result = {"config": args.config, "oom_error": oom_error.__name__}
    result.update(startup(torch))
    step(torch, 0, [])  # the product's cuBLAS workspaces, which stay, are made before anything is counted
    torch.cuda.synchronize()
    a = over_device(torch, args.config, oom_error)
    if args.require_torch_errors and not issubclass(oom_error, torch.cuda.OutOfMemoryError):
        a["why"].append("the library raises RuntimeError: built without torch's headers")
    result["over"] = a
    result.update(large_tensor(torch))
    result["loop"] = training_loop(torch, args.config, oom_error)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


# ---- the driver ----------------------------------------------------------------------------

def spawn(argv):
    """A fresh process's RESULT, or a dict with its error."""
    cmd = [sys.executable, os.path.abspath(__file__)] + argv
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"no result in {CHILD_TIMEOUT} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {proc.returncode}: {tail[:150]}"}


def verdicts(r):
    """(a), (b), (c) as short texts, what failed (lines), and whether the row passed."""
    if "error" in r:
        return ("FAIL", "-", "-"), [r["error"]], False
    a, c = r["over"], r["loop"]
    loop = f"({c['chunks']} GiB, {c['steps']} steps)"
    texts = ("pass" if not a["why"] else "FAIL", r["large"], ("pass " if not c["why"] else "FAIL ") + loop)
    failed = [f"(a) {w}" for w in a["why"]] + [f"(c) {w}" for w in c["why"]]
    failed += [f"(b) {r['large']}"] if r["large"].startswith("FAIL") else []
    return texts, failed, not failed


def table(results):
    print(f"\n{'config':7} {'(a) over':9} {'raises':24} {'message starts':44} {'pending':8} {'(b) 40 GiB':11} "
          f"{'(c) loop':26} {'first ms':>9} {'first MiB':>10} {'grow ms':>8}")
    passed, notes = 0, []
    for config, r in results:
        (va, vb, vc), failed, ok = verdicts(r)
        passed += ok
        notes += [f"  {config}: {f}" for f in failed]
        if "error" in r:
            print(f"{config:7} {va}")
            continue
        a = r["over"]
        print(f"{config:7} {va:9} {a['raised'] or '(nothing)':24} {a['message'][:44]:44} {a['pending']:8} {vb:11} "
              f"{vc:26} {r['first_ms']:9.1f} {r['first_mib']:10.1f} {r['grow_ms']:8.2f}")
    print("\n".join(notes))
    return passed


def drive(args):
    configs = [c for c in args.configs.split(",") if c]
    if set(configs) - set(CONFIGS):
        sys.exit(f"unknown configurations: {', '.join(sorted(set(configs) - set(CONFIGS)))}")
    why = skip_reason()
    if why:
        print(f"SKIPPED: {why}")
        return SKIP
    if any(c != "native" for c in configs):
        print(f"library: {the_library(args.library)}")
    results = []
    for config in configs:
        argv = ["--config", config] + (["--library", args.library] if args.library else [])
        argv += ["--require-torch-errors"] if args.require_torch_errors else []
        results.append((config, spawn(argv)))
    passed = table(results)
    torch_oom_probe.table(spawn(["--probe"]))
    print(f"\ntorch-oom: {passed} of {len(results)} configurations passed every check")
    return 0 if passed == len(results) else 1


def the_library(library):
    """the library the kinds run on: --library, else the installed package's; exits saying why not"""
    try:
        from ggml_cuda_pool_torch import find_library
        return find_library(library)
    except ImportError:
        sys.exit("ggml_cuda_pool_torch is not installed: pip install --no-build-isolation ./integrations/pytorch "
                 "(or bash scripts/torch-oom.sh, which builds it out of the tree)")
    except FileNotFoundError as e:
        sys.exit(str(e))


def skip_reason():
    probe = ("import torch, sys\n"
             "sys.exit(0 if torch.cuda.is_available() else 'torch sees no CUDA device')")
    try:
        proc = subprocess.run([sys.executable, "-c", probe], stderr=subprocess.PIPE, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "importing torch took over 300 s"
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or ["cannot import torch"])[-1]


def main():
    args = parse_args()
    if args.probe:
        print(RESULT_PREFIX + json.dumps(torch_oom_probe.measure()), flush=True)
        return 0
    return run_one(args) if args.config else drive(args)


if __name__ == "__main__":
    sys.exit(main())
