// Host-allocation failures (host-alloc.h): the k-th allocation the library makes fails with
// std::bad_alloc. Every call still answers with a status; afterwards no buffer is lost (live +
// cached == reserved), a retried call works, and nothing is left after ctx_free. First the
// defects this found, one test each; then the sweep: every k of an LLM workload and of a
// graph's pin and capture calls, for every pool kind.

#include "harness.h"
#include "host-alloc.h"
#include "sweep-workload.h"

#include <cstdio>
#include <vector>

using namespace harness;

namespace {

constexpr ggml_cpool_status OK  = GGML_CPOOL_STATUS_OK;
constexpr ggml_cpool_status OOM = GGML_CPOOL_STATUS_OUT_OF_MEMORY;

constexpr size_t CAPACITY = 64 * MiB;

// discards every line: the sweep's refusals would flood stderr, and a capturing logger would
// allocate inside the armed calls
struct quiet_log {
    quiet_log() {
        ggml_cpool_log_set([](ggml_cpool_log_level, const char *, void *) {}, nullptr);
    }
    ~quiet_log() { ggml_cpool_log_set(nullptr, nullptr); }
};

template <typename F> ggml_cpool_status armed(F && f) {
    return host_alloc::armed(f);
}

// runs `run` with the k-th armed allocation failing, for k = 1, 2, ... until a run reaches no
// k-th; returns how many runs had one fail
template <typename F> int each_failing_allocation(F && run) {
    for (uint64_t k = 1;; k++) {
        host_alloc::start({ k, false });
        run();
        if (host_alloc::failed() == 0) {
            return int(k - 1);
        }
    }
}

uint64_t threshold(ggml_cpool_driver_t drv, int device) {
    uint64_t t = 0;
    EXPECT_EQ(ggml_cpool_driver_release_threshold(drv, device, &t), OK);
    return t;
}

size_t device_pool_reserved(ggml_cpool_driver_t drv, int device) {
    size_t reserved = 0, used = 0;
    EXPECT_EQ(ggml_cpool_driver_pool_usage(drv, device, &reserved, &used), OK);
    return reserved;
}

// frees `held` with the hook armed: a free must not fail, and if one did, a retry must work
void free_armed(ggml_cpool_t pool, const std::vector<buf> & held) {
    for (const buf & b : held) {
        ggml_cpool_status st = armed([&] { return ggml_cpool_free(pool, b.ptr, b.size); });
        EXPECT_EQ(st, OK) << "a free needs no host memory";
        if (st != OK) {
            EXPECT_EQ(ggml_cpool_free(pool, b.ptr, b.size), OK) << "a retried free works";
        }
    }
}

// four buffers of `kind` come back with every host allocation failing in turn: no free makes
// one, so none can fail (`capturing`: the stream captures while they come back, so the async
// kind holds them back until the capture ends)
int frees_under_failing_allocations(ggml_cpool_kind kind, bool capturing) {
    sim_device device(sim_params(CAPACITY));
    quiet_log  quiet;
    return each_failing_allocation([&] {
        ggml_cpool_ctx_t ctx    = make_ctx(device.drv, kind);
        ggml_cpool_t     pool   = pool_of(ctx);
        void *           stream = nullptr;
        ASSERT_EQ(ggml_cpool_ctx_stream(ctx, 0, &stream), OK);
        std::vector<buf> held;
        for (size_t mib : { 1, 2, 3, 5 }) {
            held.push_back(alloc(pool, mib * MiB));
        }
        if (capturing) {
            ASSERT_EQ(ggml_cpool_sim_set_capturing(device.drv, 0, stream, 1), OK);
        }
        free_armed(pool, held);
        if (capturing) {
            ASSERT_EQ(ggml_cpool_sim_set_capturing(device.drv, 0, stream, 0), OK);
        }
        expect_consistent(pool);
        EXPECT_EQ(stats_of(pool).live_bytes, 0u);
        ggml_cpool_ctx_free(ctx);
        EXPECT_EQ(ggml_cpool_driver_outstanding(device.drv), 0u) << "nothing left after ctx_free";
    });
}

TEST(HostAllocFault, ALegacyFreeNeverNeedsMemory) {
    EXPECT_EQ(frees_under_failing_allocations(GGML_CPOOL_KIND_LEGACY, false), 0) << "a free makes no host allocation";
}

TEST(HostAllocFault, AnAsyncFreeHeldBackDuringCaptureNeverNeedsMemory) {
    EXPECT_EQ(frees_under_failing_allocations(GGML_CPOOL_KIND_ASYNC, true), 0) << "a free makes no host allocation";
}

TEST(HostAllocFault, APinnedAllocationThatCannotBeRecordedLeavesNoTrace) {
    sim_device device(sim_params(CAPACITY));
    quiet_log  quiet;
    int        runs = each_failing_allocation([&] {
        ggml_cpool_ctx_t ctx   = make_ctx(device.drv, GGML_CPOOL_KIND_LEGACY);
        ggml_cpool_t     pool  = pool_of(ctx);
        uint64_t         graph = 0;
        ASSERT_EQ(ggml_cpool_ctx_pin_begin(ctx, &graph), OK);
        buf               first = alloc(pool, 1 * MiB); // the graph already holds a buffer
        buf               b;
        ggml_cpool_status st = armed([&] { return ggml_cpool_alloc(pool, 2 * MiB, 0, &b.ptr, &b.size); });
        EXPECT_TRUE(st == OK || st == OOM) << ggml_cpool_status_str(st);
        ASSERT_EQ(ggml_cpool_ctx_pin_end(ctx), OK);
        release(pool, first);
        if (st == OK) {
            release(pool, b);
        }
        EXPECT_EQ(ggml_cpool_ctx_pin_release(ctx, graph), OK) << "the graph's list names only its buffers";
        EXPECT_EQ(ggml_cpool_trim(pool), OK);
        expect_consistent(pool);
        EXPECT_EQ(stats_of(pool).reserved_bytes, 0u) << "no pin left behind";
        ggml_cpool_ctx_free(ctx);
        EXPECT_EQ(ggml_cpool_driver_outstanding(device.drv), 0u);
    });
    EXPECT_GT(runs, 0);
}

TEST(HostAllocFault, AVmmGrowthThatCannotBeRecordedLeavesNothingBehind) {
    sim_device device(sim_params(CAPACITY));
    quiet_log  quiet;
    int        runs = each_failing_allocation([&] {
        ggml_cpool_ctx_t  ctx   = make_ctx(device.drv, GGML_CPOOL_KIND_VMM);
        ggml_cpool_t      pool  = pool_of(ctx);
        buf               first = alloc(pool, 1 * MiB); // the range reserved, one chunk mapped
        buf               b;
        ggml_cpool_status st = armed([&] { return ggml_cpool_alloc(pool, 5 * MiB, 0, &b.ptr, &b.size); });
        EXPECT_TRUE(st == OK || st == OOM) << ggml_cpool_status_str(st);
        if (st == OK) {
            release(pool, b);
        }
        release(pool, first);
        EXPECT_EQ(ggml_cpool_trim(pool), OK);
        expect_consistent(pool);
        EXPECT_EQ(ggml_cpool_driver_used(device.drv, 0), 0u);
        ggml_cpool_ctx_free(ctx);
        EXPECT_EQ(ggml_cpool_driver_outstanding(device.drv), 0u) << "no mapping, handle or range left";
    });
    EXPECT_GT(runs, 0);
}

TEST(HostAllocFault, AnAsyncPoolThatCannotBeRecordedLeavesTheDevicePoolsAsTheyWere) {
    // a pool on every device: the process-wide record grows as it learns them. No retry within
    // a run, so that each growth is reached, and failed, while the record is still small
    sim_device device(sim_params(CAPACITY, GGML_CPOOL_MAX_DEVICES));
    quiet_log  quiet;
    int        runs = each_failing_allocation([&] {
        ggml_cpool_ctx_t ctx = make_ctx(device.drv, GGML_CPOOL_KIND_ASYNC);
        for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
            ggml_cpool_t      pool = nullptr;
            ggml_cpool_status st   = armed([&] { return ggml_cpool_ctx_get_pool(ctx, d, &pool); });
            EXPECT_TRUE(st == OK || st == OOM) << ggml_cpool_status_str(st);
            if (st != OK) {
                break;
            }
            release(pool, alloc(pool, 1 * MiB));
        }
        ggml_cpool_ctx_free(ctx); // the last async pool: every device trimmed and restored
        for (int d = 0; d < GGML_CPOOL_MAX_DEVICES; d++) {
            EXPECT_EQ(threshold(device.drv, d), 0u) << "device " << d << ": the release threshold restored";
            EXPECT_EQ(device_pool_reserved(device.drv, d), 0u) << "device " << d << ": trimmed";
        }
    });
    EXPECT_GT(runs, 0);
}

// The sweep. The shared workload cut to two layers and four decode steps per request: every
// failure site a layer has, in a run short enough to repeat for each of its allocations
constexpr llm_shape MODEL        = { 2, 512, 1408, 512 };
constexpr int       DECODE_STEPS = 4;

// what the armed calls of one run answered (the sweep runs on one thread)
struct tally {
    int errors     = 0; // statuses other than OK
    int unexpected = 0; // statuses that call may not answer
};
tally g_tally;

// what a call may answer besides OK
enum class may { ok_only, oom, oom_or_unsupported };

ggml_cpool_status note(ggml_cpool_status st, may m) {
    if (st != OK) {
        g_tally.errors++;
        bool allowed = (m != may::ok_only && st == OOM) ||
                       (m == may::oom_or_unsupported && st == GGML_CPOOL_STATUS_UNSUPPORTED);
        g_tally.unexpected += !allowed;
    }
    return st;
}

// the workload's calls, armed: an allocation may run out of host memory, a free or a trim needs none
ggml_cpool_status armed_alloc(ggml_cpool_t pool, size_t size, uint32_t flags, void ** ptr, size_t * actual) {
    return note(armed([&] { return ggml_cpool_alloc(pool, size, flags, ptr, actual); }), may::oom);
}

ggml_cpool_status armed_free(ggml_cpool_t pool, void * ptr, size_t size) {
    return note(armed([&] { return ggml_cpool_free(pool, ptr, size); }), may::ok_only);
}

ggml_cpool_status armed_trim(ggml_cpool_t pool) {
    return note(armed([&] { return ggml_cpool_trim(pool); }), may::ok_only);
}

const llm_calls ARMED = { armed_alloc, armed_free, armed_trim };

struct session {
    ggml_cpool_ctx_t ctx  = nullptr;
    ggml_cpool_t     pool = nullptr;
};

// a context and its pool, armed; a refused call is retried unarmed, and then works
session open(ggml_cpool_driver_t drv, ggml_cpool_kind kind) {
    session               s;
    ggml_cpool_ctx_params p = ctx_params(drv, kind);
    if (note(armed([&] { return ggml_cpool_ctx_create(&p, &s.ctx); }), may::oom) != OK) {
        s.ctx = make_ctx(drv, kind);
    }
    if (note(armed([&] { return ggml_cpool_ctx_get_pool(s.ctx, 0, &s.pool); }), may::oom) != OK) {
        s.pool = pool_of(s.ctx);
    }
    return s;
}

// scenario: the LLM workload
session llm(ggml_cpool_driver_t drv, ggml_cpool_kind kind) {
    session s = open(drv, kind);
    sweep::workload(s.pool, MODEL, DECODE_STEPS, ARMED);
    return s;
}

// scenario: a graph's life. A warm-up pass; buffers pinned before and during a capture (the
// async kind refuses allocations during one), freed during it and after; the graph released
session pins(ggml_cpool_driver_t drv, ggml_cpool_kind kind) {
    session s      = open(drv, kind);
    void *  stream = nullptr;
    if (note(armed([&] { return ggml_cpool_ctx_stream(s.ctx, 0, &stream); }), may::oom) != OK) {
        EXPECT_EQ(ggml_cpool_ctx_stream(s.ctx, 0, &stream), OK);
    }
    llm_forward(s.pool, MODEL, false, 1, 200, ARMED);
    uint64_t graph = 0;
    if (note(armed([&] { return ggml_cpool_ctx_pin_begin(s.ctx, &graph); }), may::oom) != OK) {
        EXPECT_EQ(ggml_cpool_ctx_pin_begin(s.ctx, &graph), OK);
    }
    auto get = [&](std::vector<buf> & held, size_t size, may m) {
        buf b;
        if (note(armed([&] { return ggml_cpool_alloc(s.pool, size, 0, &b.ptr, &b.size); }), m) == OK) {
            held.push_back(b);
        }
    };
    auto put = [&](std::vector<buf> & held) {
        for (const buf & b : held) {
            armed_free(s.pool, b.ptr, b.size);
        }
        held.clear();
    };
    std::vector<buf> before, during, after;
    get(before, 256 * KiB, may::oom);
    ggml_cpool_sim_set_capturing(drv, 0, stream, 1);
    get(during, 512 * KiB, may::oom_or_unsupported);
    put(before); // held back (async) or cached while capturing
    ggml_cpool_sim_set_capturing(drv, 0, stream, 0);
    note(armed([&] { return ggml_cpool_ctx_pin_end(s.ctx); }), may::ok_only);
    put(during);
    get(after, 128 * KiB, may::oom); // after the capture: what was held back goes out
    put(after);
    armed_trim(s.pool); // the graph's buffers stay
    note(armed([&] { return ggml_cpool_ctx_pin_release(s.ctx, graph); }), may::ok_only);
    armed_trim(s.pool);
    return s;
}

struct sweep_param {
    const char * scenario;
    session (*run)(ggml_cpool_driver_t, ggml_cpool_kind);
    ggml_cpool_kind kind;
};

void PrintTo(const sweep_param & p, std::ostream * os) {
    *os << p.scenario << "_" << ggml_cpool_kind_str(p.kind);
}

class HostAllocFaultSweep : public testing::TestWithParam<sweep_param> {
  protected:
    // one run of the scenario under `plan`, then the checks; the statuses other than OK
    int run(const host_alloc::plan & plan) {
        const sweep_param & p = GetParam();
        g_tally               = {};
        host_alloc::start(plan);
        session s = p.run(device_.drv, p.kind);
        EXPECT_EQ(g_tally.unexpected, 0) << "a call answered a status it may not";
        ggml_cpool_stats st = stats_of(s.pool);
        EXPECT_EQ(st.live_bytes, 0u) << "every buffer came back";
        EXPECT_EQ(st.live_bytes + st.cached_bytes, st.reserved_bytes);
        EXPECT_LE(st.reserved_bytes, ggml_cpool_driver_used(device_.drv, 0));
        // a retried call works, and everything goes back
        EXPECT_EQ(llm_forward(s.pool, MODEL, true, 1, 200), 0);
        EXPECT_EQ(ggml_cpool_trim(s.pool), OK);
        EXPECT_EQ(ggml_cpool_driver_used(device_.drv, 0), 0u);
        // nothing is left after ctx_free, whose own allocations fail too
        armed([&] {
            ggml_cpool_ctx_free(s.ctx);
            return OK;
        });
        EXPECT_EQ(ggml_cpool_driver_outstanding(device_.drv), 0u);
        if (p.kind == GGML_CPOOL_KIND_ASYNC) {
            EXPECT_EQ(threshold(device_.drv, 0), 0u) << "the warm record let go of the device";
            EXPECT_EQ(device_pool_reserved(device_.drv, 0), 0u);
        }
        return g_tally.errors;
    }

    sim_device device_{ sim_params(sweep::CAPACITY) };
    quiet_log  quiet_;
};

TEST_P(HostAllocFaultSweep, EveryHostAllocationFailsInTurn) {
    run({}); // fills what the process keeps between runs (the warm record's room)
    ASSERT_FALSE(HasFailure()) << "the scenario works without faults";
    const int      clean = run({}); // the async kind refuses an allocation during capture
    const uint64_t K     = host_alloc::counted();
    ASSERT_GT(K, 10u);
    int runs = 0, recovered = 0, errored = 0;
    for (bool later : { false, true }) {
        for (uint64_t k = 1; k <= K && !HasFailure(); k++) {
            SCOPED_TRACE(testing::Message() << "allocation " << k << (later ? " and every later one" : "") << " fails");
            // recovered: every call answered as in the run without faults
            (run({ k, later }) == clean ? recovered : errored)++;
            EXPECT_GE(host_alloc::failed(), 1u) << "the failure site was reached";
            runs++;
        }
    }
    printf("host-alloc sweep [%s, %s]: K=%llu host allocations, %d runs: %d recovered, %d returned an error\n",
           GetParam().scenario, ggml_cpool_kind_str(GetParam().kind), (unsigned long long) K, runs, recovered, errored);
    RecordProperty("K", int(K));
    RecordProperty("recovered", recovered);
    RecordProperty("errors", errored);
}

const sweep_param SWEEPS[] = {
    { "llm", llm, GGML_CPOOL_KIND_LEGACY },   { "llm", llm, GGML_CPOOL_KIND_PLAIN },
    { "llm", llm, GGML_CPOOL_KIND_VMM },      { "llm", llm, GGML_CPOOL_KIND_ASYNC },
    { "pins", pins, GGML_CPOOL_KIND_LEGACY }, { "pins", pins, GGML_CPOOL_KIND_PLAIN },
    { "pins", pins, GGML_CPOOL_KIND_VMM },    { "pins", pins, GGML_CPOOL_KIND_ASYNC },
};

INSTANTIATE_TEST_SUITE_P(Sim, HostAllocFaultSweep, testing::ValuesIn(SWEEPS),
                         [](const testing::TestParamInfo<sweep_param> & info) {
                             return std::string(info.param.scenario) + "_" + ggml_cpool_kind_str(info.param.kind);
                         });

} // namespace
