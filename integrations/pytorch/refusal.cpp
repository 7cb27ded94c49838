#include "refusal.h"

#include <cstdarg>
#include <cstdio>

namespace gcp_torch {

void refusal::set(kind k, const char * fmt, ...) {
    what = k;
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof(message), fmt, args);
    va_end(args);
}

size_text format_size(size_t bytes) {
    constexpr double KiB = 1024.0, MiB = KiB * 1024.0, GiB = MiB * 1024.0;
    size_text        t;
    const double     b = double(bytes);
    if (b <= KiB) {
        snprintf(t.text, sizeof(t.text), "%zu bytes", bytes);
    } else if (b <= MiB) {
        snprintf(t.text, sizeof(t.text), "%.2f KiB", b / KiB);
    } else if (b <= GiB) {
        snprintf(t.text, sizeof(t.text), "%.2f MiB", b / MiB);
    } else {
        snprintf(t.text, sizeof(t.text), "%.2f GiB", b / GiB);
    }
    return t;
}

void refuse_out_of_memory(refusal * why, const out_of_memory_facts & f) {
    char device[256] = "";
    if (f.memory_known) {
        snprintf(device, sizeof(device), " GPU %d has a total capacity of %s of which %s is free.", f.device,
                 format_size(f.total).text, format_size(f.free).text);
    }
    char others[256];
    if (f.other_pools == 0) {
        snprintf(others, sizeof(others), "no other stream has a pool on GPU %d", f.device);
    } else {
        snprintf(others, sizeof(others), "the %d other stream pool%s of GPU %d gave back %s when trimmed",
                 f.other_pools, f.other_pools == 1 ? "" : "s", f.device, format_size(f.given_back).text);
    }
    why->set(refusal::kind::out_of_memory,
             "CUDA out of memory. Tried to allocate %s.%s This stream's ggml-cuda-pool %s pool holds %s, %s of it in "
             "use by tensors; %s. The pool's reason: %s",
             format_size(f.size).text, device, f.kind, format_size(f.reserved).text, format_size(f.live).text, others,
             f.reason);
}

} // namespace gcp_torch
