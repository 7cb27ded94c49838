// libFuzzer target: the input is a sequence of pool operations (alloc, free, bad frees, trim,
// driver faults) on one context over a small sim device. After every operation the invariants
// must hold; at the end, with faults disarmed, everything must go back to the driver.
//
//   byte 0           pool kind (legacy, plain, vmm) and device size
//   then per op      one opcode byte, then its operands

#include "ggml-cuda-pool-testing.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

namespace {

constexpr size_t MiB         = size_t(1) << 20;
constexpr size_t VMM_RESERVE = 64 * MiB;
constexpr size_t MAX_LIVE    = 64;

struct reader {
    const uint8_t * data;
    size_t          size;
    size_t          pos = 0;
    bool            more() const { return pos < size; }
    uint8_t         byte() { return pos < size ? data[pos++] : 0; }
    uint32_t        u24() { return uint32_t(byte()) | uint32_t(byte()) << 8 | uint32_t(byte()) << 16; }
};

void quiet(ggml_cpool_log_level, const char *, void *) {}

// a broken invariant is a crash: that is what the fuzzer reports
void check(bool ok, const char * what) {
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        __builtin_trap();
    }
}

struct buffer {
    void * ptr;
    size_t size;
};

void check_pool(ggml_cpool_t pool, ggml_cpool_driver_t sim, const std::map<uintptr_t, buffer> & live) {
    ggml_cpool_stats s{};
    check(ggml_cpool_get_stats(pool, &s) == GGML_CPOOL_STATUS_OK, "stats");
    check(s.live_bytes + s.cached_bytes == s.reserved_bytes, "live + cached == reserved");
    check(s.reserved_bytes <= ggml_cpool_driver_used(sim, 0), "reserved <= what the driver handed out");
    size_t    sum  = 0;
    uintptr_t last = 0;
    for (auto & kv : live) {
        check(kv.first >= last, "live buffers do not overlap");
        last = kv.first + kv.second.size;
        sum += kv.second.size;
    }
    check(sum == s.live_bytes, "live bytes match the buffers held");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    ggml_cpool_log_set(quiet, nullptr);
    reader                       in{ data, size };
    uint8_t                      head    = in.byte();
    static const ggml_cpool_kind kinds[] = { GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM };

    ggml_cpool_sim_params p = ggml_cpool_sim_default_params();
    p.capacity              = (8 + (head >> 2) % 56) * MiB;
    ggml_cpool_driver_t sim = nullptr, fault = nullptr;
    check(ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &p, &sim) == GGML_CPOOL_STATUS_OK, "sim driver");
    check(ggml_cpool_driver_fault_create(sim, "", &fault) == GGML_CPOOL_STATUS_OK, "fault driver");
    ggml_cpool_ctx_params cp = ggml_cpool_ctx_default_params();
    cp.driver                = fault;
    cp.kind[0]               = kinds[head % 3];
    cp.vmm_reserve           = VMM_RESERVE;
    ggml_cpool_ctx_t ctx     = nullptr;
    ggml_cpool_t     pool    = nullptr;
    check(ggml_cpool_ctx_create(&cp, &ctx) == GGML_CPOOL_STATUS_OK, "context");
    check(ggml_cpool_ctx_get_pool(ctx, 0, &pool) == GGML_CPOOL_STATUS_OK, "pool");

    std::vector<buffer>         order;
    std::map<uintptr_t, buffer> live;
    char                        spec[48];
    while (in.more()) {
        uint8_t op = in.byte();
        switch (op % 8) {
            case 0:
            case 1:
            case 2: { // alloc: 24-bit size scaled by the opcode's high bits
                size_t            request = size_t(in.u24()) << (op >> 6);
                uint32_t          flags   = (op & 0x20) ? GGML_CPOOL_ALLOC_OVERALLOCATE : 0;
                buffer            b{};
                ggml_cpool_status st = ggml_cpool_alloc(pool, request, flags, &b.ptr, &b.size);
                if (st == GGML_CPOOL_STATUS_OK) {
                    check(request > 0 && b.size >= request, "actual >= requested");
                    if (order.size() < MAX_LIVE) {
                        order.push_back(b);
                        live[reinterpret_cast<uintptr_t>(b.ptr)] = b;
                    } else {
                        check(ggml_cpool_free(pool, b.ptr, b.size) == GGML_CPOOL_STATUS_OK, "free");
                    }
                } else {
                    check(request == 0 ? st == GGML_CPOOL_STATUS_INVALID_ARGUMENT :
                                         st != GGML_CPOOL_STATUS_INVALID_ARGUMENT,
                          "a valid request is never called invalid");
                }
                break;
            }
            case 3:
            case 4: { // free, picked from the end (graph-like) or anywhere
                if (order.empty()) {
                    break;
                }
                uint8_t pick = in.byte();
                size_t  i    = (op & 0x80) ? pick % order.size() :
                                             order.size() - 1 - pick % std::min<size_t>(order.size(), 3);
                buffer  b    = order[i];
                order.erase(order.begin() + std::ptrdiff_t(i));
                live.erase(reinterpret_cast<uintptr_t>(b.ptr));
                check(ggml_cpool_free(pool, b.ptr, b.size) == GGML_CPOOL_STATUS_OK, "free of a live buffer");
                break;
            }
            case 5: { // bad frees are refused
                uint8_t what = in.byte();
                if (!order.empty()) {
                    buffer b = order[what % order.size()];
                    check(ggml_cpool_free(pool, b.ptr, b.size + 1 + what) == GGML_CPOOL_STATUS_INVALID_ARGUMENT,
                          "wrong size refused");
                    // an interior address may be where the next buffer starts (VMM packs them)
                    char * inside = static_cast<char *>(b.ptr) + 1 + what;
                    if (inside < static_cast<char *>(b.ptr) + b.size) {
                        check(ggml_cpool_free(pool, inside, b.size) == GGML_CPOOL_STATUS_INVALID_ARGUMENT,
                              "interior pointer refused");
                    }
                }
                check(ggml_cpool_free(pool, &what, 1) == GGML_CPOOL_STATUS_INVALID_ARGUMENT, "foreign pointer refused");
                break;
            }
            case 6:
                ggml_cpool_trim(pool); // may fail under faults; checked below
                break;
            case 7: { // arm a fault: the k-th call of a kind, alone or with every later one
                uint8_t                   k       = in.byte();
                static const char * const calls[] = { "any",    "malloc", "free",  "sync",
                                                      "create", "map",    "unmap", "release" };
                if (k == 0) {
                    ggml_cpool_driver_set_faults(fault, nullptr);
                } else {
                    snprintf(spec, sizeof(spec), "fail=%s:%d%s", calls[op >> 5], 1 + (k & 0x3f), (k & 0x40) ? "+" : "");
                    check(ggml_cpool_driver_set_faults(fault, spec) == GGML_CPOOL_STATUS_OK, "spec accepted");
                }
                break;
            }
        }
        check_pool(pool, sim, live);
    }

    ggml_cpool_driver_set_faults(fault, nullptr);
    for (auto & b : order) {
        check(ggml_cpool_free(pool, b.ptr, b.size) == GGML_CPOOL_STATUS_OK, "final free");
    }
    check(ggml_cpool_trim(pool) == GGML_CPOOL_STATUS_OK, "trim once the driver recovers");
    check(ggml_cpool_driver_used(sim, 0) == 0, "everything back to the driver after trim");
    ggml_cpool_ctx_free(ctx);
    check(ggml_cpool_driver_outstanding(sim) == 0, "nothing outstanding after destroy");
    ggml_cpool_driver_release(fault);
    ggml_cpool_driver_release(sim);
    ggml_cpool_log_set(nullptr, nullptr);
    return 0;
}
