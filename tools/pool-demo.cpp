// pool-demo: drives every pool kind with the allocation pattern of an LLM forward pass (prompt
// chunks, then decode steps) and prints a pool report. Without a GPU it runs on the sim driver.
//
//   pool-demo [--driver cuda|sim] [--kinds legacy,plain,vmm,async] [--layers N] [--embd N] [--ff N]
//             [--prompt N] [--tokens N] [--capacity MiB] [--overallocate 1|0]
//
// --help prints this usage and each option's default. An unknown option, or a value an option does not take, stops it with
// one line naming it and exit status 2, as does async on the sim driver (async is CUDA's own
// stream-ordered pool, which the sim driver only imitates). A model that holds more at once than
// the sim device has stops it before the first row, with one line and status 1; a session whose
// pool runs out of memory stops at that pass, says so, and the status is 1. A legend follows the
// report's rows.

#include "ggml-cuda-pool-testing.h"
#include "llm-pass.h"
#include "pool-demo-help.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <strings.h>
#include <vector>

namespace {

constexpr size_t MiB           = size_t(1) << 20;
constexpr int    UBATCH        = 512; // prompt tokens per forward pass
constexpr int    KV_HEAD_RATIO = 1;   // K/V width is n_embd / this (> 1 for grouped-query attention)
// the largest values the options take: beyond any model, and small enough that every size the
// workload computes fits a size_t and every context length an int
constexpr long   MAX_LAYERS       = 1024;
constexpr long   MAX_WIDTH        = long(1) << 20;
constexpr long   MAX_TOKENS       = long(1) << 24;
constexpr long   MAX_CAPACITY_MIB = long(1) << 24;

struct model {
    int    layers   = 8; // the width of a 7B-class model, fewer layers to keep the run short
    size_t embd     = 4096;
    size_t ff       = 11008;
    int    prompt   = 512;
    int    tokens   = 15872;     // decode until the context is 16384
    size_t capacity = 700 * MiB; // sim device memory: tight enough that growth needs reclaim
};

llm_shape shape_of(const model & m) {
    return { m.layers, m.embd, m.ff, m.embd / KV_HEAD_RATIO };
}

enum class driver_choice { automatic, cuda, sim };

// what the command line asks for
struct arguments {
    model                        m;
    driver_choice                driver = driver_choice::automatic;
    std::vector<ggml_cpool_kind> kinds  = { GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN, GGML_CPOOL_KIND_VMM };
    std::vector<bool>            modes  = { true, false }; // K/V conversions with and without OVERALLOCATE
};

// the driver the sessions run on, what its lines may call it, and why the cuda driver is not it
struct device {
    ggml_cpool_driver_t drv     = nullptr;
    bool                sim     = false;
    std::string         no_cuda = "--driver sim";
};

void report(const char * kind, const ggml_cpool_stats & s, int errors) {
    printf("%-9s %9llu %6.2f%% %8llu %8llu %10.1f %10.1f %8llu %7llu %5llu %6d\n", kind, (unsigned long long) s.allocs,
           s.allocs ? 100.0 * double(s.hits) / double(s.allocs) : 0.0, (unsigned long long) s.driver_allocs,
           (unsigned long long) s.driver_frees, double(s.peak_live_bytes) / MiB, double(s.peak_reserved_bytes) / MiB,
           (unsigned long long) s.lru_reclaims, (unsigned long long) s.flushes, (unsigned long long) s.generation,
           errors);
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

// the most the session holds live at once, in the bytes it asks for: no pool can run it in less
size_t least_memory(const model & m) {
    size_t live = 0, peak = 0;
    auto   get = [&](size_t size, uint32_t, void ** ptr, size_t * actual) {
        live += size;
        peak    = std::max(peak, live);
        *ptr    = nullptr;
        *actual = size;
        return true;
    };
    auto put = [&](void *, size_t actual) { live -= actual; };
    llm_passes([&](int batch, int ctx) { return llm_forward_over(get, put, shape_of(m), false, batch, ctx); }, m.prompt,
               UBATCH, m.tokens);
    return peak;
}

// one session of the model on a fresh context, until its first pass that runs out of memory;
// prints its report row; false when it failed
bool run(const device & dev, const model & m, ggml_cpool_kind kind, bool overallocate) {
    std::string           label = std::string(ggml_cpool_kind_str(kind)) + (overallocate ? " 2x" : " 1x");
    ggml_cpool_ctx_params p     = ggml_cpool_ctx_default_params();
    p.driver                    = dev.drv;
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
    int        failed_at = 0; // the context length of the pass that ran out of memory
    const auto pass      = [&](int batch, int ctx_len) {
        const int errors = llm_forward(pool, shape_of(m), overallocate, batch, ctx_len);
        failed_at        = errors > 0 ? ctx_len : failed_at;
        return errors;
    };
    const int        errors = llm_passes(pass, m.prompt, UBATCH, m.tokens, /*stop_at_failure*/ true);
    ggml_cpool_stats s;
    ggml_cpool_get_stats(pool, &s);
    report(label.c_str(), s, errors);
    ggml_cpool_ctx_free(ctx);
    if (errors > 0) {
        fprintf(stderr, "pool-demo: %s ran out of memory at a context of %d tokens (%s): the session stops there\n",
                label.c_str(), failed_at, dev.sim ? "the sim driver's --capacity" : "the device");
    }
    return errors == 0;
}

// the usage to `out`; `status` back, the exit status
int usage(FILE * out, int status) {
    print_usage(out);
    return status;
}

// --help: the usage, then each option with its default
int help() {
    const model m;
    print_help({ m.layers, m.embd, m.ff, UBATCH, m.prompt, m.tokens, m.capacity / MiB });
    return 0;
}

// `text` as a whole decimal number within [min, max]; false for anything else
bool parse_number(const char * text, long min, long max, long * out) {
    char * end = nullptr;
    errno      = 0;
    long v     = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

// the options that take a number, and the range each takes
struct number_option {
    const char * name;
    long         min, max;
    void (*set)(model & m, long v);
};

const number_option NUMBER_OPTIONS[] = {
    { "--layers", 1, MAX_LAYERS, [](model & m, long v) { m.layers           = int(v); } },
    { "--embd", KV_HEAD_RATIO, MAX_WIDTH, [](model & m, long v) { m.embd= size_t(v); } },
    { "--ff", 1, MAX_WIDTH, [](model & m, long v) { m.ff= size_t(v); } },
    { "--prompt", 1, MAX_TOKENS, [](model & m, long v) { m.prompt= int(v); } },
    { "--tokens", 0, MAX_TOKENS, [](model & m, long v) { m.tokens= int(v); } },
    { "--capacity", 1, MAX_CAPACITY_MIB, [](model & m, long v) { m.capacity= size_t(v) * MiB; } },
};

// --kinds: the module's kinds but auto, comma-separated, in any case; false for another
bool parse_kinds(const char * text, std::vector<ggml_cpool_kind> * kinds, std::string * bad) {
    kinds->clear();
    for (const char * at = text;;) {
        const char *    comma = strchr(at, ',');
        std::string     name  = comma ? std::string(at, comma) : std::string(at);
        ggml_cpool_kind kind  = GGML_CPOOL_KIND_AUTO;
        if (ggml_cpool_kind_from_str(name.c_str(), &kind) != GGML_CPOOL_STATUS_OK || kind == GGML_CPOOL_KIND_AUTO) {
            *bad = name;
            return false;
        }
        kinds->push_back(kind);
        if (comma == nullptr) {
            return true;
        }
        at = comma + 1;
    }
}

// whether `arg` names one of the demo's options
bool is_option(const std::string & arg) {
    for (const number_option & o : NUMBER_OPTIONS) {
        if (arg == o.name) {
            return true;
        }
    }
    return arg == "--driver" || arg == "--kinds" || arg == "--overallocate";
}

// one option (is_option) and its value into `a`; a value it does not take: one line saying what it takes
bool parse_option(const std::string & arg, const char * val, arguments * a) {
    for (const number_option & o : NUMBER_OPTIONS) {
        long v = 0;
        if (arg == o.name && !parse_number(val, o.min, o.max, &v)) {
            fprintf(stderr, "pool-demo: %s %s: it takes a whole number from %ld to %ld\n", o.name, val, o.min, o.max);
            return false;
        }
        if (arg == o.name) {
            o.set(a->m, v);
            return true;
        }
    }
    std::string bad;
    if (arg == "--driver" && strcasecmp(val, "cuda") != 0 && strcasecmp(val, "sim") != 0) {
        fprintf(stderr, "pool-demo: --driver %s: it takes cuda or sim (without it: cuda where a device is, else sim)\n",
                val);
    } else if (arg == "--driver") {
        a->driver = strcasecmp(val, "sim") == 0 ? driver_choice::sim : driver_choice::cuda;
        return true;
    } else if (arg == "--overallocate" && strcmp(val, "1") != 0 && strcmp(val, "0") != 0) {
        fprintf(stderr, "pool-demo: --overallocate %s: it takes 1 (growing requests) or 0 (plain ones)\n", val);
    } else if (arg == "--overallocate") {
        a->modes = { strcmp(val, "1") == 0 };
        return true;
    } else if (parse_kinds(val, &a->kinds, &bad)) {
        return true;
    } else {
        fprintf(stderr, "pool-demo: --kinds %s: '%s' is not one of legacy, plain, vmm, async\n", val, bad.c_str());
    }
    return false;
}

constexpr int RUN_DEMO      = -1; // parse_arguments: no exit status yet, the sessions run
constexpr int BAD_ARGUMENTS = 2;  // the exit status of a command line the demo does not take

// the command line into `a`; RUN_DEMO, or the exit status (--help: the usage on stdout, 0)
int parse_arguments(int argc, char ** argv, arguments * a) {
    for (int i = 1; i < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            return help();
        }
        if (!is_option(arg)) {
            fprintf(stderr, "pool-demo: unknown option '%s'\n", argv[i]);
            return usage(stderr, BAD_ARGUMENTS);
        }
        if (i + 1 == argc) {
            fprintf(stderr, "pool-demo: %s needs a value\n", argv[i]);
            return usage(stderr, BAD_ARGUMENTS);
        }
        if (!parse_option(arg, argv[i + 1], a)) {
            return BAD_ARGUMENTS;
        }
    }
    return RUN_DEMO;
}

// keeps the last warning or error the module logs (why the cuda driver cannot be made), which the
// demo reports itself or answers by taking the sim driver, and shows the notes asked for on stderr
void keep_line(ggml_cpool_log_level level, const char * text, void * line) {
    if (level < GGML_CPOOL_LOG_WARN) {
        if (level >= ggml_cpool_log_threshold()) {
            fputs(text, stderr);
        }
        return;
    }
    *static_cast<std::string *>(line) = std::string(text, strcspn(text, "\n"));
}

// the real device when there is one (or when asked), else the sim driver with `capacity` bytes;
// no driver when the one asked for is unavailable
device open_driver(driver_choice choice, size_t capacity) {
    device                dev;
    ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
    sim.capacity              = capacity;
    if (choice != driver_choice::sim) {
        ggml_cpool_log_set(keep_line, &dev.no_cuda);
        const ggml_cpool_status st = ggml_cpool_driver_create(GGML_CPOOL_DRIVER_CUDA, nullptr, &dev.drv);
        ggml_cpool_log_set(nullptr, nullptr);
        if (st == GGML_CPOOL_STATUS_OK) {
            return dev;
        }
        if (choice == driver_choice::cuda) {
            fprintf(stderr, "pool-demo: the cuda driver is unavailable: %s\n", dev.no_cuda.c_str());
            return dev;
        }
        printf("no CUDA device: running on the sim driver (%.0f MiB of host memory acting as a device)\n",
               double(capacity) / MiB);
    }
    if (dev.drv == nullptr) {
        dev.sim = ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &dev.drv) == GGML_CPOOL_STATUS_OK;
    }
    return dev;
}

void print_header(const model & m) {
    printf("model: %d layers, n_embd %zu, n_ff %zu; prompt %d tokens in chunks of %d, then %d decode steps\n\n",
           m.layers, m.embd, m.ff, m.prompt, UBATCH, m.tokens);
    printf("%-9s %9s %7s %8s %8s %10s %10s %8s %7s %5s %6s\n", "pool", "allocs", "hits", "drv-alloc", "drv-free",
           "peak-live", "peak-resv", "lru", "flushes", "gen", "errors");
    printf("%-9s %9s %7s %8s %8s %10s %10s %8s %7s %5s %6s\n", "", "", "", "", "", "MiB", "MiB", "reclaims", "", "",
           "");
}

// what the report's rows say, under them (docs/trace-and-replay.md says more), and why async has none
void print_legend(const device & dev, const arguments & a) {
    printf(
        "\n2x, 1x: the K/V f16 conversions asked for with OVERALLOCATE (growing) or without it\n"
        "hits: served asking the driver for no memory; drv-alloc, drv-free: driver allocations (vmm: mappings), frees\n"
        "peak-live, peak-resv: most in use, most held; lru reclaims, flushes: out-of-memory recoveries\n"
        "gen: times the pool gave memory back to the driver; errors: allocations refused\n");
    if (std::find(a.kinds.begin(), a.kinds.end(), GGML_CPOOL_KIND_ASYNC) == a.kinds.end()) {
        printf("no async row: %s\n", dev.sim ?
                                         "the async kind is CUDA's stream-ordered pool, which needs the cuda driver" :
                                         "--kinds legacy,plain,vmm,async adds it");
    }
}

// a session, and its row, for each kind and mode; the exit status: 1 when a session failed
int run_kinds(const device & dev, const arguments & a) {
    int status = 0;
    for (ggml_cpool_kind kind : a.kinds) {
        for (bool overallocate : a.modes) {
            status = run(dev, a.m, kind, overallocate) ? status : 1;
        }
    }
    return status;
}

// whether the kinds asked for run on this driver: async on the cuda driver alone
bool runs_kinds(const device & dev, const std::vector<ggml_cpool_kind> & kinds) {
    const bool async = std::find(kinds.begin(), kinds.end(), GGML_CPOOL_KIND_ASYNC) != kinds.end();
    if (dev.sim && async) {
        fprintf(stderr,
                "pool-demo: --kinds async: the async kind is CUDA's stream-ordered pool and needs the cuda driver, "
                "which this run lacks (%s)\n",
                dev.no_cuda.c_str());
    }
    return !(dev.sim && async);
}

// whether the model fits the sim device at all (a real device: whether it fits is for its sessions to find)
bool fits(const device & dev, const model & m) {
    const size_t least = dev.sim ? least_memory(m) : 0;
    if (least > m.capacity) {
        fprintf(stderr,
                "pool-demo: the model holds up to %.1f MiB at once, more than the sim device's %zu MiB "
                "(--capacity): no pool can run it\n",
                double(least) / MiB, m.capacity / MiB);
    }
    return least <= m.capacity;
}

} // namespace

int main(int argc, char ** argv) {
    arguments a;
    const int parsed = parse_arguments(argc, argv, &a);
    if (parsed != RUN_DEMO) {
        return parsed;
    }
    const device dev = open_driver(a.driver, a.m.capacity);
    if (dev.drv == nullptr) {
        return 1;
    }
    if (!runs_kinds(dev, a.kinds)) {
        ggml_cpool_driver_release(dev.drv);
        return BAD_ARGUMENTS;
    }
    if (!contexts_available(dev.drv) || !fits(dev, a.m)) {
        ggml_cpool_driver_release(dev.drv);
        return 1;
    }
    print_header(a.m);
    const int status = run_kinds(dev, a);
    print_legend(dev, a);
    size_t left = ggml_cpool_driver_outstanding(dev.drv);
    printf("\ndriver allocations outstanding after every context was freed: %zu\n", left);
    ggml_cpool_driver_release(dev.drv);
    return left == 0 ? status : 1;
}
