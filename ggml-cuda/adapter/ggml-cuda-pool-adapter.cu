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
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

namespace {
enum class owner { module, ggml, ggml_legacy }; // whose pools serve a backend context
} // namespace

// what the pools of one backend context share: its number (stats lines name it), its
// configuration, the module context, and what the context's CUDA graphs did
struct ggml_cuda_cpool_session {
    uint64_t         id = 0;
    std::string      config; // the configuration's name: GGML_CUDA_POOL's, or its turn in GGML_CUDA_POOL_ROTATE
    owner            pools = owner::module;
    ggml_cpool_ctx_t ctx   = nullptr; // the module's pools; null where ggml's own serve
    uint64_t         graph_events[GGML_CUDA_CPOOL_GRAPH_EVENTS] = {};
    bool             capture_abandoned = false; // since ggml last asked

    ~ggml_cuda_cpool_session(); // synchronizes the borrowed streams before the memory goes back
};

namespace {

constexpr const char * ENV_POOL   = "GGML_CUDA_POOL";       // ggml | ggml-legacy | a module kind
constexpr const char * ENV_STATS  = "GGML_CUDA_POOL_STATS"; // 1: a stats line per pool at exit on stderr; a path: appended there
constexpr const char * ENV_KV_F16 = "GGML_CUDA_POOL_KV_F16"; // graph (default) | pool | pool-1x: where the FA K/V f16 conversions live
constexpr const char * ENV_ROTATE = "GGML_CUDA_POOL_ROTATE"; // configurations, comma-separated: backend contexts take turns
constexpr double       MiB        = 1024.0 * 1024.0;

// the pools one backend context gets
struct choice {
    std::string     name  = "auto";
    owner           pools = owner::module;
    ggml_cpool_kind kind  = GGML_CPOOL_KIND_AUTO; // a module kind; AUTO: the module's environment decides
};

struct settings {
    choice              pools;  // GGML_CUDA_POOL
    std::vector<choice> rotate; // GGML_CUDA_POOL_ROTATE: backend context k takes rotate[(k - 1) % size]
    bool                kv_in_pool = false;
    bool                kv_growing = true; // pool-1x: the conversions asked for as plain requests, no OVERALLOCATE
    std::string         stats; // empty: none; "-": stderr; else a file to append to
};

// ggml's own pools by name; any other name is a module kind's, which the module reads (and refuses, if malformed)
static choice choice_of(const char * name) {
    choice c;
    c.name  = name;
    c.pools = c.name == "ggml" ? owner::ggml : c.name == "ggml-legacy" ? owner::ggml_legacy : owner::module;
    return c;
}

// a rotation's entry is named by the adapter, not read from the environment by the module: its kind
// is resolved here, and an unknown name ends the process as a malformed GGML_CUDA_POOL does
static choice rotation_entry(const std::string & name) {
    choice c = choice_of(name.c_str());
    if (c.pools != owner::module) {
        return c;
    }
    std::string kinds; // the names the module gives its kinds
    for (ggml_cpool_kind k : { GGML_CPOOL_KIND_AUTO, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN,
                               GGML_CPOOL_KIND_ASYNC }) {
        if (name == ggml_cpool_kind_str(k)) {
            c.kind = k;
            return c;
        }
        kinds += std::string(kinds.empty() ? "" : ", ") + ggml_cpool_kind_str(k);
    }
    GGML_ABORT("ggml-cuda-pool: %s names '%s', which is neither ggml, ggml-legacy nor a pool kind (%s)", ENV_ROTATE,
               name.c_str(), kinds.c_str());
}

static const settings & config() {
    static const settings s = [] {
        settings     c;
        const char * pool = getenv(ENV_POOL);
        if (pool != nullptr) {
            c.pools = choice_of(pool);
        }
        const char * rotate = getenv(ENV_ROTATE);
        if (rotate != nullptr && *rotate != '\0' && pool != nullptr) {
            // the module reads GGML_CUDA_POOL itself: it would refuse ggml's names and decide auto entries
            GGML_ABORT("ggml-cuda-pool: %s replaces %s; unset %s", ENV_ROTATE, ENV_POOL, ENV_POOL);
        }
        for (const char * at = rotate; at != nullptr && *at != '\0';) {
            const char * end = strchr(at, ',');
            c.rotate.push_back(rotation_entry(end ? std::string(at, end) : std::string(at)));
            at = end ? end + 1 : nullptr;
        }
        const char * kv = getenv(ENV_KV_F16);
        if (kv != nullptr && (strcmp(kv, "pool") == 0 || strcmp(kv, "pool-1x") == 0)) {
            c.kv_in_pool = true;
            c.kv_growing = strcmp(kv, "pool") == 0;
        } else if (kv != nullptr && *kv != '\0' && strcmp(kv, "graph") != 0) {
            GGML_LOG_WARN("ggml-cuda-pool: %s=%s is neither graph, pool nor pool-1x; the conversions stay in the graph "
                          "allocator's buffer\n", ENV_KV_F16, kv);
        }
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
    uint64_t     lru_reclaims = 0, flushes = 0, oom = 0, syncs = 0;
    uint64_t     call_ns = 0; // inside the pool's alloc and free, as ggml calls them
    // the growing K/V f16 conversion buffers: requests, the largest one, and the largest buffer they got
    uint64_t     growing = 0;
    size_t       growing_peak = 0, growing_got = 0;

    void note_growing(size_t size, size_t actual) {
        growing++;
        growing_peak = std::max(growing_peak, size);
        growing_got  = std::max(growing_got, actual);
    }
};

// adds the time until its end to *total (nothing when total is null). ggml's own pools have no
// timer: the adapter times every pool alike, at ggml's interface, the adapter's own work included
class call_timer {
  public:
    explicit call_timer(uint64_t * total) : total(total), start(total ? clock::now() : clock::time_point()) {}
    ~call_timer() {
        if (total != nullptr) {
            *total += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count());
        }
    }
    call_timer(const call_timer &)             = delete;
    call_timer & operator=(const call_timer &) = delete;

  private:
    using clock = std::chrono::steady_clock;
    uint64_t *        total;
    clock::time_point start;
};

// one statistics line, where GGML_CUDA_POOL_STATS asks for them
static void report_line(const char * fmt, ...) GGML_ATTRIBUTE_FORMAT(1, 2);
static void report_line(const char * fmt, ...) {
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
    va_list args;
    va_start(args, fmt);
    vfprintf(out, fmt, args);
    va_end(args);
    if (out != stderr) {
        fclose(out);
    }
}

// one line per pool, at its destruction
static void report(uint64_t session, int device, int slot, const figures & f) {
    report_line("ggml-cuda-pool stats: session=%llu device=%d slot=%d pool=%s allocs=%llu hits=%llu driver_allocs=%llu "
                "driver_frees=%llu peak_live_mib=%.2f peak_reserved_mib=%.2f lru_reclaims=%llu flushes=%llu oom=%llu "
                "syncs=%llu growing_requests=%llu growing_peak_request_mib=%.2f growing_peak_buffer_mib=%.2f call_ms=%.3f\n",
                (unsigned long long) session, device, slot, f.kind, (unsigned long long) f.allocs,
                (unsigned long long) f.hits, (unsigned long long) f.driver_allocs, (unsigned long long) f.driver_frees,
                f.peak_live / MiB, f.peak_reserved / MiB, (unsigned long long) f.lru_reclaims,
                (unsigned long long) f.flushes, (unsigned long long) f.oom, (unsigned long long) f.syncs,
                (unsigned long long) f.growing, f.growing_peak / MiB, f.growing_got / MiB, f.call_ns / 1e6);
}


// a module pool behind ggml's interface
struct module_pool final : ggml_cuda_pool {
    module_pool(std::shared_ptr<ggml_cuda_cpool_session> session, ggml_cpool_t pool, int device, int slot,
                cudaStream_t stream) :
        session(std::move(session)), pool(pool), device(device), slot(slot), stream(stream),
        timed(!config().stats.empty()) {}

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
            seen.syncs         = s.synchronizes;
            report(session->id, device, slot, seen);
        }
    }

    void * alloc(size_t size, size_t * actual_size) override {
        call_timer timer(timed ? &seen.call_ns : nullptr);
        return take(size, false, 0, actual_size);
    }

    void * alloc_overallocate(size_t size, size_t max_size, size_t * actual_size) override {
        if (!config().kv_growing) {
            return alloc(size, actual_size); // as ggml's own pools serve it: no headroom
        }
        void * ptr = nullptr;
        {
            call_timer timer(timed ? &seen.call_ns : nullptr);
            ptr = take(size, true, max_size, actual_size);
        }
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        call_timer        timer(timed ? &seen.call_ns : nullptr);
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
    ggml_cpool_status request(size_t size, bool growing, size_t limit, void ** ptr, size_t * actual_size) {
        // ggml may ask for nothing (the scratch of an empty tensor); the module refuses a zero
        // size, so ask for one byte: still a buffer of its own that free takes back
        size = std::max<size_t>(size, 1);
        return growing ? ggml_cpool_alloc_growing(pool, size, limit, ptr, actual_size) :
                         ggml_cpool_alloc(pool, size, 0, ptr, actual_size);
    }

    void * take(size_t size, bool growing, size_t limit, size_t * actual_size) {
        void *            ptr = nullptr;
        ggml_cpool_status st  = request(size, growing, limit, &ptr, actual_size);
        if (st != GGML_CPOOL_STATUS_OK && abandon_capture()) {
            st = request(size, growing, limit, &ptr, actual_size); // outside the capture: with recovery
        }
        if (st != GGML_CPOOL_STATUS_OK) {
            fail(device, "alloc", st);
        }
        return ptr;
    }

    // the module returned an error while the stream captures a graph, where it may not synchronize
    // or free to recover: the capture ends here, what it holds (the graph's nodes before this
    // allocation) runs now, once, and the rest of the graph runs eagerly after it. Dropping what
    // was captured and evaluating the graph again would not do: ggml-alloc hands an input's memory
    // to a later node once its last reader has run, so a graph's evaluation cannot be repeated
    bool abandon_capture() {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture == cudaStreamCaptureStatusNone) {
            (void) cudaGetLastError();
            return false;
        }
        cudaGraph_t graph = nullptr;
        cudaError_t err   = cudaStreamEndCapture(stream, &graph); // an invalidated capture: an error, no graph
        if (err == cudaSuccess) {
            err = run_once(graph);
        }
        if (graph != nullptr) {
            (void) cudaGraphDestroy(graph);
        }
        if (err != cudaSuccess) {
            (void) cudaGetLastError();
            GGML_LOG_ERROR("ggml-cuda-pool: an allocation failed during a CUDA graph capture on device %d, and the "
                           "work captured before it could not run (%s)\n", device, cudaGetErrorString(err));
            return false;
        }
        GGML_LOG_WARN("ggml-cuda-pool: an allocation failed during a CUDA graph capture on device %d (%s); the capture "
                      "ends there, what it holds runs once and the rest of the graph without it, where the pool can "
                      "recover\n", device, ggml_cpool_last_error());
        session->capture_abandoned = true;
        session->graph_events[GGML_CUDA_CPOOL_GRAPH_ABANDONED]++;
        return true;
    }

    // a captured graph launched once on the pool's stream, ahead of anything launched after it
    cudaError_t run_once(cudaGraph_t graph) const {
        size_t      nodes = 0;
        cudaError_t err   = cudaGraphGetNodes(graph, nullptr, &nodes);
        if (err != cudaSuccess || nodes == 0) {
            return err; // nothing was captured before the allocation
        }
        cudaGraphExec_t exec = nullptr;
        err                  = cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
        if (err != cudaSuccess) {
            return err;
        }
        err = cudaGraphLaunch(exec, stream);
        // freed once the launch completes
        const cudaError_t destroyed = cudaGraphExecDestroy(exec);
        return err != cudaSuccess ? err : destroyed;
    }

    std::shared_ptr<ggml_cuda_cpool_session> session; // outlives every pool of the backend context
    ggml_cpool_t                             pool;
    int                                      device, slot;
    cudaStream_t                             stream; // ggml's, the one this pool's kernels run on
    bool                                     timed;  // a stats line will report the time in its calls
    figures                                  seen;
};

// ggml's own pool, watched for the stats line (only where GGML_CUDA_POOL_STATS asks for one)
struct watched_pool final : ggml_cuda_pool {
    watched_pool(std::shared_ptr<ggml_cuda_cpool_session> session, std::unique_ptr<ggml_cuda_pool> own, int device,
                 int slot) :
        session(std::move(session)), own(std::move(own)), device(device), slot(slot) {
        seen.kind = this->session->config.c_str(); // ggml or ggml-legacy; the session outlives the pool
    }

    ~watched_pool() override {
        size_t   reserved = 0;
        uint64_t drv      = 0;
        own->driver_usage(&reserved, &seen.peak_reserved, &drv);
        seen.driver_allocs = drv;
        report(session->id, device, slot, seen);
    }

    void * alloc(size_t size, size_t * actual_size) override {
        void * ptr = nullptr;
        {
            call_timer timer(&seen.call_ns);
            ptr = own->alloc(size, actual_size); // before *actual_size is read
        }
        watch(*actual_size);
        return ptr;
    }

    void * alloc_overallocate(size_t size, size_t max_size, size_t * actual_size) override {
        if (!config().kv_growing) {
            return alloc(size, actual_size); // as ggml's own pools serve it: no headroom
        }
        void * ptr = nullptr;
        {
            call_timer timer(&seen.call_ns);
            ptr = own->alloc_overallocate(size, max_size, actual_size);
        }
        watch(*actual_size);
        seen.note_growing(size, *actual_size);
        return ptr;
    }

    void free(void * ptr, size_t size) override {
        live -= size;
        call_timer timer(&seen.call_ns);
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

static std::shared_ptr<ggml_cuda_cpool_session> open_session() {
    static std::atomic<uint64_t> sessions{ 0 };
    const settings &             c       = config();
    auto                         session = std::make_shared<ggml_cuda_cpool_session>();
    session->id                          = ++sessions;
    const choice & pick = c.rotate.empty() ? c.pools : c.rotate[(session->id - 1) % c.rotate.size()];
    session->config     = pick.name;
    session->pools      = pick.pools;
    if (pick.pools != owner::module) {
        return session;
    }
    static std::once_flag logger;
    std::call_once(logger, [] { ggml_cpool_log_set(forward_log, nullptr); });
    ggml_cpool_ctx_params params = ggml_cpool_ctx_default_params(); // the cuda driver; kinds from the environment
    std::fill(std::begin(params.kind), std::end(params.kind), pick.kind); // AUTO leaves them there
    ggml_cpool_status st = ggml_cpool_ctx_create(&params, &session->ctx);
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(ggml_cuda_get_device(), "creating the pool context", st);
    }
    return session;
}

} // namespace

ggml_cuda_cpool_session::~ggml_cuda_cpool_session() {
    const uint64_t * n = graph_events;
    report_line("ggml-cuda-pool graphs: session=%llu eager=%llu captures=%llu instantiations=%llu updates=%llu "
                "update_failures=%llu launches=%llu abandoned=%llu config=%s\n",
                (unsigned long long) id, (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_EAGER],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_CAPTURE],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_INSTANTIATE],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_UPDATE],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_UPDATE_FAILED],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_LAUNCH],
                (unsigned long long) n[GGML_CUDA_CPOOL_GRAPH_ABANDONED], config.c_str());
    ggml_cpool_ctx_free(ctx);
}

bool ggml_cuda_cpool_kv_f16_in_pool() {
    return config().kv_in_pool;
}

// the session a backend context's pools share, opened by whichever comes first: a pool or a graph
static ggml_cuda_cpool_session & session_of(ggml_backend_cuda_context & ctx) {
    if (!ctx.cpool_session) {
        ctx.cpool_session = open_session();
    }
    return *ctx.cpool_session;
}

void ggml_cuda_cpool_graph_note(ggml_backend_cuda_context & ctx, ggml_cuda_cpool_graph_event event) {
    session_of(ctx).graph_events[event]++;
}

bool ggml_cuda_cpool_capture_abandoned(ggml_backend_cuda_context & ctx) {
    ggml_cuda_cpool_session & s = session_of(ctx);
    const bool                abandoned = s.capture_abandoned;
    s.capture_abandoned                 = false;
    return abandoned;
}

uint64_t ggml_cuda_cpool_generation(const ggml_backend_cuda_context & ctx) {
    // ggml's own pools never give memory back while the context lives: their generation stays 0
    return ctx.cpool_session && ctx.cpool_session->ctx ? ggml_cpool_ctx_generation(ctx.cpool_session->ctx) : 0;
}

std::unique_ptr<ggml_cuda_pool> ggml_cuda_cpool_new_pool(ggml_backend_cuda_context & ctx, int device, int stream_no,
                                                         ggml_cuda_own_pool_fn own_pool) {
    const ggml_cuda_cpool_session & s = session_of(ctx);
    if (s.pools != owner::module) {
        std::unique_ptr<ggml_cuda_pool> own = own_pool(device, s.pools == owner::ggml);
        if (config().stats.empty()) {
            return own;
        }
        return std::make_unique<watched_pool>(ctx.cpool_session, std::move(own), device, stream_no);
    }
    ggml_cpool_ctx_t  session = ctx.cpool_session->ctx;
    ggml_cpool_t      pool    = nullptr;
    cudaStream_t      stream  = ctx.stream(device, stream_no);
    ggml_cpool_status st      = ggml_cpool_ctx_set_stream(session, device, stream_no, stream);
    if (st == GGML_CPOOL_STATUS_OK) {
        st = ggml_cpool_ctx_get_slot_pool(session, device, stream_no, &pool);
    }
    if (st != GGML_CPOOL_STATUS_OK) {
        fail(device, "creating the pool", st);
    }
    return std::make_unique<module_pool>(ctx.cpool_session, pool, device, stream_no, stream);
}
