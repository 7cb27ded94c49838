// ggml-cuda-pool as ggml's ggml_cuda_pool. One module context per ggml backend context (the
// session: its memory is never handed to another backend context, whose graphs could still use
// it), one module pool per (device, stream slot) on the stream ggml launches that slot's kernels
// on, as ggml keeps a pool per stream: a buffer freed on one stream is never reused on another
// without a synchronize. ggml creates and owns the streams; the module borrows them.

#include "ggml-cuda-pool-adapter.cuh"

#include "common.cuh"
#include "ggml-cuda-pool.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

// what the pools of one backend context share: its number (stats lines name it) and, where the
// module's pools serve, the module context
struct ggml_cuda_cpool_session {
    uint64_t         id  = 0;
    ggml_cpool_ctx_t ctx = nullptr;

    ~ggml_cuda_cpool_session() { ggml_cpool_ctx_free(ctx); } // synchronizes the borrowed streams first
};

namespace {

constexpr const char * ENV_POOL  = "GGML_CUDA_POOL";       // ggml | ggml-legacy | a module kind
constexpr const char * ENV_STATS = "GGML_CUDA_POOL_STATS"; // 1: a stats line per pool at exit on stderr; a path: appended there
constexpr double       MiB       = 1024.0 * 1024.0;

enum class owner { module, ggml, ggml_legacy };

struct settings {
    owner       pools = owner::module;
    std::string stats; // empty: none; "-": stderr; else a file to append to
};

static const settings & config() {
    static const settings s = [] {
        settings     c;
        const char * pool = getenv(ENV_POOL);
        if (pool != nullptr && strcmp(pool, "ggml") == 0) {
            c.pools = owner::ggml;
        } else if (pool != nullptr && strcmp(pool, "ggml-legacy") == 0) {
            c.pools = owner::ggml_legacy;
        } // any other value is the module's to read (and to refuse, if malformed)
        const char * stats = getenv(ENV_STATS);
        if (stats != nullptr && *stats != '\0' && strcmp(stats, "0") != 0) {
            c.stats = strcmp(stats, "1") == 0 ? "-" : stats;
        }
        return c;
    }();
    return s;
}

static ggml_log_level to_ggml(ggml_cpool_log_level level) {
    switch (level) {
        case GGML_CPOOL_LOG_DEBUG: return GGML_LOG_LEVEL_DEBUG;
        case GGML_CPOOL_LOG_INFO:  return GGML_LOG_LEVEL_INFO;
        case GGML_CPOOL_LOG_WARN:  return GGML_LOG_LEVEL_WARN;
        case GGML_CPOOL_LOG_ERROR: return GGML_LOG_LEVEL_ERROR;
    }
    return GGML_LOG_LEVEL_ERROR;
}

// the module's lines go through ggml's logger, at the module's own threshold
static void forward_log(ggml_cpool_log_level level, const char * text, void * /*user_data*/) {
    if (level >= ggml_cpool_log_threshold()) {
        ggml_log_internal(to_ggml(level), "%s", text);
    }
}

// the module has exhausted its recovery: fail as ggml's own pools do, with the module's reason
[[noreturn]] static void fail(int device, const char * what, ggml_cpool_status st) {
    GGML_ABORT("ggml-cuda-pool: %s on device %d failed (%s): %s", what, device, ggml_cpool_status_str(st),
               ggml_cpool_last_error());
}

// what the stats line says of a pool, from the module's statistics or from watching ggml's own
struct figures {
    const char * kind = "";
    uint64_t     allocs = 0, hits = 0, driver_allocs = 0, driver_frees = 0;
    size_t       peak_live = 0, peak_reserved = 0;
    uint64_t     lru_reclaims = 0, flushes = 0, oom = 0;
    // the growing K/V f16 conversion buffers: requests, the largest one, and the largest buffer they got
    uint64_t     growing = 0;
    size_t       growing_peak = 0, growing_got = 0;

    void note_growing(size_t size, size_t actual) {
        growing++;
        growing_peak = std::max(growing_peak, size);
        growing_got  = std::max(growing_got, actual);
    }
};

// one line per pool, at its destruction, where GGML_CUDA_POOL_STATS asks for it
static void report(uint64_t session, int device, int slot, const figures & f) {
    const std::string & where = config().stats;
    if (where.empty()) {
        return;
    }
    static std::mutex           mutex;
    std::lock_guard<std::mutex> lock(mutex);
    FILE *                      out = where == "-" ? stderr : fopen(where.c_str(), "a");
    if (out == nullptr) {
        GGML_LOG_WARN("ggml-cuda-pool: cannot append the pool statistics to %s\n", where.c_str());
        return;
    }
    fprintf(out,
            "ggml-cuda-pool stats: session=%llu device=%d slot=%d pool=%s allocs=%llu hits=%llu driver_allocs=%llu "
            "driver_frees=%llu peak_live_mib=%.2f peak_reserved_mib=%.2f lru_reclaims=%llu flushes=%llu oom=%llu "
            "growing_requests=%llu growing_peak_request_mib=%.2f growing_peak_buffer_mib=%.2f\n",
            (unsigned long long) session, device, slot, f.kind, (unsigned long long) f.allocs, (unsigned long long) f.hits,
            (unsigned long long) f.driver_allocs, (unsigned long long) f.driver_frees, f.peak_live / MiB,
            f.peak_reserved / MiB, (unsigned long long) f.lru_reclaims, (unsigned long long) f.flushes,
            (unsigned long long) f.oom, (unsigned long long) f.growing, f.growing_peak / MiB, f.growing_got / MiB);
    if (out != stderr) {
        fclose(out);
    }
}

// a module pool behind ggml's interface
struct module_pool final : ggml_cuda_pool {
    module_pool(std::shared_ptr<ggml_cuda_cpool_session> session, ggml_cpool_t pool, int device, int slot) :
        session(std::move(session)), pool(pool), device(device), slot(slot) {}

    ~module_pool() override {
        ggml_cpool_stats s{};
        if (!config().stats.empty() && ggml_cpool_get_stats(pool, &s) == GGML_CPOOL_STATUS_OK) {
            seen.kind          = ggml_cpool_kind_str(ggml_cpool_get_kind(pool));
            seen.allocs        = s.allocs;
            seen.hits          = s.hits;
            seen.driver_allocs = s.driver_allocs;
            seen.driver_frees  = s.driver_frees;
            seen.peak_live     = s.peak_live_bytes;
            seen.peak_reserved = s.peak_reserved_bytes;
            seen.lru_reclaims  = s.lru_reclaims;
            seen.flushes       = s.flushes;
            seen.oom           = s.oom_returned;
            report(session->id, device, slot, seen);
        }
    }

    void * alloc(size_t size, size_t * actual_size) override { return take(size, 0, actual_size); }

    void * alloc_overallocate(size_t size, size_t * actual_size) override {
        void * ptr = take(size, GGML_CPOOL_ALLOC_OVERALLOCATE, actual_size);
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        ggml_cpool_status st = ggml_cpool_free(pool, ptr, size);
        if (st != GGML_CPOOL_STATUS_OK) {
            fail(device, "free", st);
        }
    }

    bool driver_usage(size_t * reserved, size_t * peak_reserved, uint64_t * driver_allocs) const override {
        ggml_cpool_stats s{};
        if (ggml_cpool_get_stats(pool, &s) != GGML_CPOOL_STATUS_OK) {
            return false;
        }
        *reserved      = s.reserved_bytes;
        *peak_reserved = s.peak_reserved_bytes;
        *driver_allocs = s.driver_allocs;
        return true;
    }

  private:
    void * take(size_t size, uint32_t flags, size_t * actual_size) {
        void * ptr = nullptr;
        // ggml may ask for nothing (the scratch of an empty tensor); the module refuses a zero
        // size, so ask for one byte: still a buffer of its own that free takes back
        ggml_cpool_status st = ggml_cpool_alloc(pool, std::max<size_t>(size, 1), flags, &ptr, actual_size);
        if (st != GGML_CPOOL_STATUS_OK) {
            fail(device, "alloc", st);
        }
        return ptr;
    }

    std::shared_ptr<ggml_cuda_cpool_session> session; // outlives every pool of the backend context
    ggml_cpool_t                             pool;
    int                                      device, slot;
    figures                                  seen;
};

// ggml's own pool, watched for the stats line (only where GGML_CUDA_POOL_STATS asks for one)
struct watched_pool final : ggml_cuda_pool {
    watched_pool(std::shared_ptr<ggml_cuda_cpool_session> session, std::unique_ptr<ggml_cuda_pool> own, int device,
                 int slot, const char * kind) :
        session(std::move(session)), own(std::move(own)), device(device), slot(slot) {
        seen.kind = kind;
    }

    ~watched_pool() override {
        size_t   reserved = 0;
        uint64_t drv      = 0;
        own->driver_usage(&reserved, &seen.peak_reserved, &drv);
        seen.driver_allocs = drv;
        report(session->id, device, slot, seen);
    }

    void * alloc(size_t size, size_t * actual_size) override {
        void * ptr = own->alloc(size, actual_size); // before *actual_size is read
        watch(*actual_size);
        return ptr;
    }

    void * alloc_overallocate(size_t size, size_t * actual_size) override {
        void * ptr = own->alloc_overallocate(size, actual_size);
        watch(*actual_size);
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        live -= size;
        own->free(ptr, size);
    }

    bool driver_usage(size_t * reserved, size_t * peak_reserved, uint64_t * driver_allocs) const override {
        return own->driver_usage(reserved, peak_reserved, driver_allocs);
    }

  private:
    void watch(size_t actual) {
        size_t   reserved = 0, peak = 0;
        uint64_t before = seen.driver_allocs, after = 0;
        if (own->driver_usage(&reserved, &peak, &after)) {
            seen.driver_allocs = after;
        }
        seen.allocs++;
        seen.hits += after == before;
        live += actual;
        seen.peak_live = std::max(seen.peak_live, live);
    }

    std::shared_ptr<ggml_cuda_cpool_session> session;
    std::unique_ptr<ggml_cuda_pool>          own;
    int                                      device, slot;
    size_t                                   live = 0;
    figures                         seen;
};

static std::shared_ptr<ggml_cuda_cpool_session> open_session(bool module) {
    static std::atomic<uint64_t> sessions{ 0 };
    auto                         session = std::make_shared<ggml_cuda_cpool_session>();
    session->id                          = ++sessions;
    if (!module) {
        return session;
    }
    static std::once_flag logger;
    std::call_once(logger, [] { ggml_cpool_log_set(forward_log, nullptr); });
    ggml_cpool_ctx_params params = ggml_cpool_ctx_default_params(); // the cuda driver; kinds from the environment
    ggml_cpool_status     st     = ggml_cpool_ctx_create(&params, &session->ctx);
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(ggml_cuda_get_device(), "creating the pool context", st);
    }
    return session;
}

} // namespace

bool ggml_cuda_cpool_active() {
    return config().pools == owner::module;
}

uint64_t ggml_cuda_cpool_generation(const ggml_backend_cuda_context & ctx) {
    // ggml's own pools never give memory back while the context lives: their generation stays 0
    return ctx.cpool_session && ctx.cpool_session->ctx ? ggml_cpool_ctx_generation(ctx.cpool_session->ctx) : 0;
}

std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool) {
    const settings & c = config();
    if (!ctx.cpool_session) {
        ctx.cpool_session = open_session(c.pools == owner::module);
    }
    if (c.pools != owner::module) {
        std::unique_ptr<ggml_cuda_pool> own = own_pool(device, c.pools == owner::ggml);
        if (c.stats.empty()) {
            return own;
        }
        return std::make_unique<watched_pool>(ctx.cpool_session, std::move(own), device, stream_no,
                                              c.pools == owner::ggml ? "ggml" : "ggml-legacy");
    }
    ggml_cpool_ctx_t  session = ctx.cpool_session->ctx;
    ggml_cpool_t      pool    = nullptr;
    ggml_cpool_status st      = ggml_cpool_ctx_set_stream(session, device, stream_no, ctx.stream(device, stream_no));
    if (st == GGML_CPOOL_STATUS_OK) {
        st = ggml_cpool_ctx_get_slot_pool(session, device, stream_no, &pool);
    }
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(device, "creating the pool", st);
    }
    return std::make_unique<module_pool>(ctx.cpool_session, pool, device, stream_no);
}
