// pool-demo: drives every pool kind with the allocation pattern of an LLM forward pass (prompt
// chunks, then decode steps) and prints a pool report. Without a GPU it runs on the sim driver.
//
//   pool-demo [--driver cuda|sim] [--kinds legacy,plain,vmm] [--layers N] [--embd N] [--ff N]
//             [--prompt N] [--tokens N] [--capacity MiB] [--overallocate 1|0]

#include "ggml-cuda-pool-testing.h"
#include "llm-pass.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t MiB           = size_t(1) << 20;
constexpr int    UBATCH        = 512; // prompt tokens per forward pass
constexpr int    KV_HEAD_RATIO = 1;   // K/V width is n_embd / this (> 1 for grouped-query attention)

struct model {
    int    layers   = 8; // the width of a 7B-class model, fewer layers to keep the run short
    size_t embd     = 4096;
    size_t ff       = 11008;
    int    prompt   = 512;
    int    tokens   = 15872;     // decode until the context is 16384
    size_t capacity = 700 * MiB; // sim device memory: tight enough that growth needs reclaim
};

void report(const char * kind, const ggml_cpool_stats & s, int errors) {
    printf("%-9s %9llu %6.2f%% %8llu %8llu %10.1f %10.1f %8llu %7llu %5llu %6d\n", kind, (unsigned long long) s.allocs,
           s.allocs ? 100.0 * double(s.hits) / double(s.allocs) : 0.0, (unsigned long long) s.driver_allocs,
           (unsigned long long) s.driver_frees, double(s.peak_live_bytes) / MiB, double(s.peak_reserved_bytes) / MiB,
           (unsigned long long) s.lru_reclaims, (unsigned long long) s.flushes, (unsigned long long) s.generation,
           errors);
}

bool parse_kind(const std::string & name, ggml_cpool_kind * kind) {
    for (ggml_cpool_kind k : { GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN }) {
        if (name == ggml_cpool_kind_str(k)) {
            *kind = k;
            return true;
        }
    }
    return false;
}

// whether a context can be created at all: the environment (GGML_CUDA_POOL...) is every
// session's, so a malformed value is answered once (the library's line says which), not per row
bool contexts_available(ggml_cpool_driver_t drv) {
    ggml_cpool_ctx_params p   = ggml_cpool_ctx_default_params();
    ggml_cpool_ctx_t      ctx = nullptr;
    p.driver                  = drv;
    if (ggml_cpool_ctx_create(&p, &ctx) != GGML_CPOOL_STATUS_OK) {
        return false;
    }
    ggml_cpool_ctx_free(ctx);
    return true;
}

// one session of the model on a fresh context; prints its report row; false when it failed
bool run(ggml_cpool_driver_t drv, const model & m, ggml_cpool_kind kind, bool overallocate) {
    std::string           label = std::string(ggml_cpool_kind_str(kind)) + (overallocate ? " 2x" : " 1x");
    ggml_cpool_ctx_params p     = ggml_cpool_ctx_default_params();
    p.driver                    = drv;
    p.kind[0]                   = kind;
    ggml_cpool_ctx_t  ctx       = nullptr;
    ggml_cpool_t      pool      = nullptr;
    ggml_cpool_status st        = ggml_cpool_ctx_create(&p, &ctx);
    if (st == GGML_CPOOL_STATUS_OK) {
        st = ggml_cpool_ctx_get_pool(ctx, 0, &pool);
    }
    if (st != GGML_CPOOL_STATUS_OK) {
        // a kind the device lacks (VMM on a device without it) is no failure of the demo
        printf("%-9s %s\n", label.c_str(),
               st == GGML_CPOOL_STATUS_UNSUPPORTED ? "unavailable on this device" : ggml_cpool_status_str(st));
        ggml_cpool_ctx_free(ctx);
        return st == GGML_CPOOL_STATUS_UNSUPPORTED;
    }
    const llm_shape  shape  = { m.layers, m.embd, m.ff, m.embd / KV_HEAD_RATIO };
    const int        errors = llm_session(pool, shape, overallocate, m.prompt, UBATCH, m.tokens);
    ggml_cpool_stats s;
    ggml_cpool_get_stats(pool, &s);
    report(label.c_str(), s, errors);
    ggml_cpool_ctx_free(ctx);
    return true;
}

int usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s [--driver cuda|sim] [--kinds legacy,plain,vmm] [--layers N] [--embd N] [--ff N]\n"
            "          [--prompt N] [--tokens N] [--capacity MiB] [--overallocate 1|0]\n",
            argv0);
    return 2;
}

// what the command line asks for
struct arguments {
    model             m;
    std::string       driver_name;
    std::string       kinds = "legacy,plain,vmm";
    std::vector<bool> modes = { true, false }; // K/V conversions with and without OVERALLOCATE
};

// false when the command line is malformed
bool parse_arguments(int argc, char ** argv, arguments * a) {
    model & m = a->m;
    for (int i = 1; i < argc; i++) {
        std::string  arg = argv[i];
        const char * val = i + 1 < argc ? argv[i + 1] : nullptr;
        if (val == nullptr) {
            return false;
        }
        i++;
        if (arg == "--driver") {
            a->driver_name = val;
        } else if (arg == "--kinds") {
            a->kinds = val;
        } else if (arg == "--layers") {
            m.layers = atoi(val);
        } else if (arg == "--embd") {
            m.embd = size_t(atol(val));
        } else if (arg == "--ff") {
            m.ff = size_t(atol(val));
        } else if (arg == "--prompt") {
            m.prompt = atoi(val);
        } else if (arg == "--tokens") {
            m.tokens = atoi(val);
        } else if (arg == "--overallocate") {
            a->modes = atoi(val) != 0 ? std::vector<bool>{ true } : std::vector<bool>{ false };
        } else if (arg == "--capacity") {
            m.capacity = size_t(atol(val)) * MiB;
        } else {
            return false;
        }
    }
    return m.layers >= 1 && m.embd >= KV_HEAD_RATIO && m.ff >= 1 && m.prompt >= 1 && m.tokens >= 0 && m.capacity > 0;
}

// the real device when there is one (or when asked), else the sim driver with `capacity` bytes;
// nullptr when the one asked for is unavailable
ggml_cpool_driver_t open_driver(const std::string & name, size_t capacity) {
    ggml_cpool_driver_t   drv = nullptr;
    ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    sim.capacity              = capacity;
    if (name != "sim") {
        if (ggml_cpool_driver_create(GGML_CPOOL_DRIVER_CUDA, nullptr, &drv) != GGML_CPOOL_STATUS_OK) {
            if (name == "cuda") {
                fprintf(stderr, "pool-demo: the cuda driver is unavailable\n");
                return nullptr;
            }
            printf("no CUDA device: running on the sim driver (%.0f MiB of host memory acting as a device)\n",
                   double(capacity) / MiB);
        }
    }
    if (drv == nullptr && ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &drv) != GGML_CPOOL_STATUS_OK) {
        return nullptr;
    }
    return drv;
}

void print_header(const model & m) {
    printf("model: %d layers, n_embd %zu, n_ff %zu; prompt %d tokens in chunks of %d, then %d decode steps\n\n",
           m.layers, m.embd, m.ff, m.prompt, UBATCH, m.tokens);
    printf("%-9s %9s %7s %8s %8s %10s %10s %8s %7s %5s %6s\n", "pool", "allocs", "hits", "drv-alloc", "drv-free",
           "peak-live", "peak-resv", "lru", "flushes", "gen", "errors");
    printf("%-9s %9s %7s %8s %8s %10s %10s %8s %7s %5s %6s\n", "", "", "", "", "", "MiB", "MiB", "reclaims", "", "",
           "");
}

// a session, and its row, for each kind named and each mode; the exit status: 2 when a kind is
// unknown, 1 when a session failed
int run_kinds(ggml_cpool_driver_t drv, const arguments & a) {
    const std::string & kinds  = a.kinds;
    int                 status = 0;
    size_t              start  = 0;
    while (start < kinds.size()) {
        size_t      end  = kinds.find(',', start);
        std::string name = kinds.substr(start, end == std::string::npos ? std::string::npos : end - start);
        start            = end == std::string::npos ? kinds.size() : end + 1;
        ggml_cpool_kind kind;
        if (!parse_kind(name, &kind)) {
            fprintf(stderr, "pool-demo: unknown pool kind '%s'\n", name.c_str());
            status = 2;
            continue;
        }
        for (bool overallocate : a.modes) {
            status = run(drv, a.m, kind, overallocate) ? status : 1;
        }
    }
    return status;
}

} // namespace

int main(int argc, char ** argv) {
    arguments a;
    if (!parse_arguments(argc, argv, &a)) {
        return usage(argv[0]);
    }
    ggml_cpool_driver_t drv = open_driver(a.driver_name, a.m.capacity);
    if (drv == nullptr) {
        return 1;
    }
    if (!contexts_available(drv)) {
        ggml_cpool_driver_release(drv);
        return 1;
    }
    print_header(a.m);
    const int status = run_kinds(drv, a);
    size_t    left   = ggml_cpool_driver_outstanding(drv);
    printf("\ndriver allocations outstanding after every context was freed: %zu\n", left);
    ggml_cpool_driver_release(drv);
    return left == 0 ? status : 1;
}
