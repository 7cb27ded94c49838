"""What a VMM address range as large as the device costs, measured on the driver itself (libcuda
through ctypes, in a process where torch made the device's primary context current): reserving
and freeing a range of 32 GiB (the module's default) and of the device's memory rounded to the
granularity (what the PyTorch library's VMM pools reserve), the device memory a reservation takes,
and a 64 MiB mapping inside each range (create, map, set access, unmap, release). Medians of
REPEATS. tests/torch-oom.py runs measure() in a process of its own and prints table()."""

import ctypes
import statistics
import time

MiB = 1 << 20
GiB = 1 << 30
MODULE_DEFAULT = 32 * GiB
MAPPING = 64 * MiB
REPEATS = 20
# CUDA driver API values (cuda.h)
PINNED, ON_DEVICE, READ_WRITE, RECOMMENDED = 1, 1, 3, 1


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


class Driver:
    """The few entry points, each failing with its name and CUresult."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError(f"{name}: CUresult {rc}")


def one_range(cu, size, prop, access, free_now):
    """(reserve+free us, device MiB the reservation took, mapping us) for one range."""
    u64, sz = ctypes.c_uint64, ctypes.c_size_t
    ptr, handle = u64(), u64()
    free_before = free_now()
    t0 = time.perf_counter()
    cu("cuMemAddressReserve", ctypes.byref(ptr), sz(size), sz(0), u64(0), u64(0))
    reserved = time.perf_counter() - t0
    taken = free_before - free_now()
    t1 = time.perf_counter()
    cu("cuMemCreate", ctypes.byref(handle), sz(MAPPING), ctypes.byref(prop), u64(0))
    cu("cuMemMap", ptr, sz(MAPPING), sz(0), handle, u64(0))
    cu("cuMemSetAccess", ptr, sz(MAPPING), ctypes.byref(access), sz(1))
    cu("cuMemUnmap", ptr, sz(MAPPING))
    cu("cuMemRelease", handle)
    mapped = time.perf_counter() - t1
    t2 = time.perf_counter()
    cu("cuMemAddressFree", ptr, sz(size))
    reserved += time.perf_counter() - t2
    return reserved * 1e6, taken / MiB, mapped * 1e6


def measure():
    import torch
    torch.cuda.init()
    torch.cuda.synchronize()  # the primary context, current on this thread
    device = torch.cuda.current_device()
    try:
        cu = Driver()
        prop = AllocationProp(type=PINNED, location=Location(ON_DEVICE, device))
        access = AccessDesc(location=Location(ON_DEVICE, device), flags=READ_WRITE)
        granularity = ctypes.c_size_t()
        cu("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), RECOMMENDED)
        total = torch.cuda.mem_get_info()[1]
        g = granularity.value
        rows = []
        free_now = lambda: torch.cuda.mem_get_info()[0]  # noqa: E731
        for name, size in (("module default", MODULE_DEFAULT), ("device's memory (library)", (total + g - 1) // g * g)):
            runs = [one_range(cu, size, prop, access, free_now) for _ in range(REPEATS)]
            rows.append({"range": name, "gib": size / GiB, "reserve_us": statistics.median(r[0] for r in runs),
                         "taken_mib": max(r[1] for r in runs), "map_us": statistics.median(r[2] for r in runs)})
        return {"granularity_mib": g / MiB, "rows": rows}
    except (OSError, AttributeError, RuntimeError) as e:
        return {"error": str(e)}


def table(result):
    print(f"\nVMM reservation on the driver (median of {REPEATS}; a {MAPPING // MiB} MiB mapping: create, map, "
          f"access, unmap, release)")
    if "error" in result:
        print(f"  not measured: {result['error']}")
        return
    print(f"{'range':26} {'GiB':>8} {'reserve+free us':>16} {'device MiB taken':>17} {'mapping us':>11}")
    for r in result["rows"]:
        print(f"{r['range']:26} {r['gib']:8.1f} {r['reserve_us']:16.1f} {r['taken_mib']:17.1f} {r['map_us']:11.1f}")
    print(f"granularity {result['granularity_mib']:.0f} MiB")
