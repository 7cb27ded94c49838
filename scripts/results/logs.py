"""What a run's log says: how it ended (the adapter's abort with the pool's last error, or
ggml's CUDA_CHECK with the error and the function that checked) and the pool's recovery lines."""

import re

# the adapter, where the module returned an error: the pool's own line follows its name (since
# 028c8f1 with the request's size, and inside a compute ending in the compute's failure)
POOL_ABORT = re.compile(r"ggml-cuda-pool: alloc (?:of [\d.]+ MiB )?on device \d+ failed \(\w+\): CUDA pool\[\d+\]: "
                        r"(?:async )?alloc of ([\d.]+ MiB) failed: (.*?)(?:, and \d+ retries.*|, also after.*)?$", re.M)
# the compute failed instead of the process (GGML_CUDA_POOL_ON_OOM=error): llama.cpp went on
COMPUTE_FAILED = re.compile(r"; the compute fails with GGML_STATUS_ALLOC_FAILED$", re.M)
# ggml's CUDA_CHECK: the error, then where it was checked; an error a kernel raised earlier shows
# at the next call that checks, so the function alone does not say it was out of memory
CUDA_ERROR = re.compile(r"CUDA error: (.+)")
CHECKED_IN = re.compile(r"current device: \d+, in function (\w+)")
# where the error line itself is not printed (llama-bench keeps ggml's log quiet), the abort's
# backtrace still names the function that checked: the first frame past ggml_cuda_error
CUDA_ABORT = re.compile(r"ggml-cuda\.cu:\d+: CUDA error$", re.M)
FRAME = re.compile(r"\(_ZN?(\d+)(\w+)")
EXIT = re.compile(r"^exit (\d+)\s*$", re.M)
# llama-completion's generation rate, in its closing performance lines
GENERATION_RATE = re.compile(r"\beval time =.*?([\d.]+) tokens per second")
LOG_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ [A-Z] ")
RECOVERY = re.compile(r"(?:CUDA pool\[\d+\]|ggml-cuda-pool): (?!injected|alloc (?:of [\d.]+ MiB )?on device)"
                      r"(.*(?:reclaim|retry|retrying|freeing all|trimming|the capture ends|capture is given up).*)")


def compute_failed(log):
    """whether a compute failed with GGML_STATUS_ALLOC_FAILED, the process going on"""
    return bool(COMPUTE_FAILED.search(log))


def aborted(log):
    """why the run aborted ('the pool, 8.93 MiB asked: out of memory ...', 'out of memory in
    `alloc`'), or None where the log shows no abort"""
    pool = POOL_ABORT.search(log)
    if pool:
        return f"the pool, {pool.group(1)} asked: {pool.group(2)}"
    error, where = CUDA_ERROR.search(log), CHECKED_IN.search(log)
    if not (error or where):
        checked = checked_in_backtrace(log)
        return f"CUDA error in `{checked}` (from the backtrace)" if checked else None
    what = error.group(1).strip() if error else "CUDA error"
    return f"{what} in `{where.group(1)}`" if where else what


def checked_in_backtrace(log):
    """the function that called ggml_cuda_error, by the backtrace after ggml's CUDA error line"""
    found = CUDA_ABORT.search(log)
    if not found:
        return None
    names = [m.group(2)[:int(m.group(1))] for m in FRAME.finditer(log, found.end())]
    past = names.index("ggml_cuda_error") + 1 if "ggml_cuda_error" in names else 0
    return names[past] if past < len(names) else None


def generation_rate(log):
    """llama-completion's tokens per second of generation, None where the log has none"""
    found = GENERATION_RATE.findall(log)
    return float(found[-1]) if found else None


def exit_status(log):
    """the exit status llama.sh appended to the log, None where there is none"""
    found = EXIT.findall(log)
    return int(found[-1]) if found else None


def recovery_lines(log):
    """the pool's recovery lines, without the logger's time and level or the pool's name"""
    out = []
    for line in log.splitlines():
        m = RECOVERY.search(LOG_PREFIX.sub("", line))
        if m:
            out.append(m.group(1).strip())
    return out
